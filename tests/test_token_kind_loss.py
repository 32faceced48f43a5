"""Held-out loss on new and old tokens apart (bioptimus_hf/analysis/token_kind_loss.py): which tokens are new,
the split means against a hand computation, and the whole measurement on an arm's held-out split."""

import math

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

from bioptimus_hf.analysis.token_kind_loss import heldout_loss_by_token_kind, loss_by_token_kind, new_token_mask
from bioptimus_hf.pretraining.bioptimus_config import PretrainingDataArguments
from helpers import corpus_lines


BASE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "of", "cell", "##s", "kin", "##ase"]
# Shared tokens at other ids, new tokens among them.
NEW = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "kinase", "the", "##s", "interleukin", "cell", "of", "thymus"]


def tokenizer(vocab):
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)


def test_new_tokens_are_those_whose_string_the_base_lacks():
    mask = new_token_mask(tokenizer(NEW), tokenizer(BASE))
    assert [NEW[i] for i in torch.nonzero(mask).flatten().tolist()] == ["kinase", "interleukin", "thymus"]
    assert not new_token_mask(tokenizer(BASE), tokenizer(BASE)).any()  # a continued arm: nothing is new


def test_split_means_equal_a_hand_computation_and_weigh_into_the_overall_mean():
    torch.manual_seed(0)
    model = BertForMaskedLM(
        BertConfig(
            vocab_size=len(NEW), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
        )
    ).eval()
    input_ids = torch.tensor([[2, 5, 6, 8, 9, 3], [2, 11, 10, 7, 4, 3]])
    labels = torch.full_like(input_ids, -100)
    labels[0, 1], labels[0, 2], labels[1, 1], labels[1, 3] = 5, 6, 11, 7  # new, old, new, old
    batch = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels}
    is_new = new_token_mask(tokenizer(NEW), tokenizer(BASE))
    result = loss_by_token_kind(model, [batch], is_new)
    with torch.no_grad():
        log_probs = model(input_ids=input_ids).logits.double().log_softmax(-1)
    losses = {(r, c): -log_probs[r, c, labels[r, c]].item() for r, c in [(0, 1), (0, 2), (1, 1), (1, 3)]}
    assert result["new"]["positions"] == 2 and result["old"]["positions"] == 2
    assert result["new"]["loss"] == pytest.approx((losses[0, 1] + losses[1, 1]) / 2, rel=1e-5)
    assert result["old"]["loss"] == pytest.approx((losses[0, 2] + losses[1, 3]) / 2, rel=1e-5)
    assert result["all"]["loss"] == pytest.approx((result["new"]["loss"] + result["old"]["loss"]) / 2, rel=1e-12)
    assert result["new"]["perplexity"] == pytest.approx(math.exp(result["new"]["loss"]))
    # swapping which kind a target is moves the numbers: the split is not decorative
    swapped = loss_by_token_kind(model, [batch], ~is_new)
    assert swapped["new"]["loss"] == pytest.approx(result["old"]["loss"], rel=1e-12)


def test_heldout_measurement_on_the_arms_split(tmp_path, tiny_model_dir, tiny_tokenizer):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(400)) + "\n", encoding="utf-8")
    data_args = PretrainingDataArguments(
        train_file=[str(corpus)], validation_split_percentage=5, max_seq_length=32, max_eval_samples=12
    )
    same = heldout_loss_by_token_kind(tiny_model_dir, tiny_model_dir, data_args, seed=1, batch_size=4)
    assert same["rows"] == 12 and same["new"]["positions"] == 0 and same["old"]["positions"] > 50
    assert same["masking"] == {"phase": "0.1", "unit": "token", "rate": 0.15, "seed": 1}
    # a base that lacks some of the model's tokens makes those targets new
    smaller = tmp_path / "smaller_base"
    vocab = list(tiny_tokenizer.get_vocab())
    tokenizer([t for t in vocab if not t.startswith("##")]).save_pretrained(smaller)
    split = heldout_loss_by_token_kind(tiny_model_dir, smaller, data_args, seed=1, batch_size=4)
    assert split["new"]["positions"] > 0 and split["all"]["positions"] == same["all"]["positions"]
    assert split["all"]["loss"] == pytest.approx(same["all"]["loss"], rel=1e-9)  # same rows, same masks
