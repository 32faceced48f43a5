"""The bf16 paths that users with native bf16 (AVX-512 BF16, AMX, GPUs) run, checked on every CPU.

bf16 asked for explicitly is honoured everywhere (emulated, slowly, where not native), so at tiny sizes
these run on the AVX2 machine CI uses too. Numbers are compared with a float64 reference within the
bound of bioptimus_hf/testing/numerics.py; decisions (tags, entities) are compared only where the float64
reference gives them a margin that bf16 rounding cannot cross. Tests marked ``precision`` take the path
``auto`` takes on this machine, and again with bf16 forced (scripts/test.sh).
"""

import copy
import json
import os

import pytest
import torch
from transformers import AutoModelForTokenClassification, BertConfig, BertForMaskedLM

import run_ner
from bioptimus_hf.ner.tagger import NerTagger
from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction
from bioptimus_hf.testing.numerics import (
    assert_close_normwise,
    encoder_tolerance,
    linear_output_scale,
    normwise_relative_error,
    recorded_linear_outputs,
)
from bioptimus_hf.utils.hardware import resolve_precision
from helpers.ner import LEARNING_NER, build_tiny_bert, quick_ner_flags, tagging_texts, write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("precision", ["bf16", "bf16-autocast", pytest.param("auto", marks=pytest.mark.precision)])
def test_tagger_logits_within_the_bound_and_decisions_with_margin_equal_float64(tagging_model, precision):
    tagger = NerTagger(tagging_model, max_seq_length=16, stride=4, batch_size=8, precision=precision)
    dtype = torch.bfloat16 if tagger.precision.startswith("bf16") else torch.float32
    reference = AutoModelForTokenClassification.from_pretrained(tagging_model).double().eval()
    _, encoding = tagger.encode(tagging_texts())
    windows = encoding.columns["input_ids"]
    labels, _ = tagger.predict_windows(windows)  # the tagger's own decisions, batched across windows
    decided = with_margin = 0
    for rows, batch in tagger.batches(windows):
        with torch.no_grad(), tagger.autocast():
            logits = tagger.model(**batch).logits.float()
        for i, row in enumerate(rows):
            length = len(windows[row])
            with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
                expected = reference(input_ids=torch.tensor([windows[row]])).logits[0]
            bound = encoder_tolerance(
                reference.config, dtype, extra_depth=1, contribution_scale=linear_output_scale(sizes, expected)
            )
            assert_close_normwise(logits[i, :length], expected, bound, f"window {row}")
            # a decision is safe where the runner-up is behind by more than twice any logit's error
            top = expected.topk(2, -1)
            safe = (top.values[:, 0] - top.values[:, 1]) > 2 * bound * expected.norm()
            decided += length
            with_margin += int(safe.sum())
            assert torch.equal(torch.tensor(labels[row][:length])[safe], top.indices[:, 0][safe]), f"window {row}"
    # The bound is a worst case (a normwise bound read as any single logit's), so only the clearer decisions
    # qualify: 47 of 313 here; test_ner_speed's agreement statistic covers the rest.
    assert with_margin >= max(20, 0.1 * decided), (with_margin, decided)


def test_tagger_bound_sees_a_swapped_window(tagging_model):
    """The bound is tight enough to fail on a real bug: another window's logits in this window's place."""
    tagger = NerTagger(tagging_model, max_seq_length=16, stride=4, precision="bf16")
    reference = AutoModelForTokenClassification.from_pretrained(tagging_model).double().eval()
    _, encoding = tagger.encode(tagging_texts()[:2])
    first, second = encoding.columns["input_ids"][:2]
    width = min(len(first), len(second))
    with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
        a = reference(input_ids=torch.tensor([first])).logits[0][:width]
    b = reference(input_ids=torch.tensor([second])).logits[0][:width].detach()
    bound = encoder_tolerance(
        reference.config, torch.bfloat16, extra_depth=1, contribution_scale=linear_output_scale(sizes, a)
    )
    assert normwise_relative_error(b, a) > 3 * bound


@pytest.mark.parametrize("precision", ["bf16", pytest.param("auto", marks=pytest.mark.precision)])
def test_masked_only_head_under_bf16_autocast_matches_the_float64_standard_head(precision):
    """Pre-training's forward as the Trainer runs it with --bf16 (autocast, float32 master weights): the
    masked-only logits and the loss against the float64 standard head's."""
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    model = BertForMaskedLM(config).eval()
    reference = copy.deepcopy(model).double()
    enable_masked_only_prediction(model)
    input_ids = torch.randint(5, 120, (4, 24))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[3, 17:] = 0
    labels = torch.full_like(input_ids, -100)
    chosen = torch.rand(input_ids.shape, generator=torch.Generator().manual_seed(1)) < 0.2
    chosen &= attention_mask.bool()
    labels[chosen] = input_ids[chosen]
    dtype = resolve_precision(precision, "cpu")
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
        full = reference(input_ids=input_ids, attention_mask=attention_mask).logits
    expected = full[labels != -100]
    # the head adds its transform and the vocabulary projection to the encoder's chain
    bound = encoder_tolerance(config, dtype, extra_depth=2, contribution_scale=linear_output_scale(sizes, expected))
    assert_close_normwise(out.logits.float(), expected, bound, "labelled logits")
    expected_loss = torch.nn.functional.cross_entropy(expected, labels[labels != -100])
    # cross-entropy moves by at most twice the largest logit error (its gradient has l1 norm <= 2)
    assert abs(out.loss.item() - expected_loss.item()) <= 2 * bound * expected.norm().item()
    # ...and the bound would see a real bug: the gathered rows off by one labelled position
    assert normwise_relative_error(expected.roll(1, dims=0), expected) > 3 * bound


FAST = quick_ner_flags(**LEARNING_NER, seeds=1)


@pytest.mark.parametrize(
    "flags",
    [
        ["--bf16", "true", "--allow_emulated_bf16", "true"],
        pytest.param(["--bf16_if_supported", "true"], marks=pytest.mark.precision),
    ],
    ids=["bf16", "auto"],
)
def test_ner_training_and_prediction_in_bf16_learn_the_synthetic_entities(tmp_path, flags):
    """run_ner.py end to end with bf16 autocast (explicit, or where `auto` takes it): it learns the easy
    synthetic entities as the float32 run does (tests/test_ner_run.py), and says which precision ran."""
    model = build_tiny_bert(str(tmp_path / "model"))
    data = write_dataset_dir(str(tmp_path / "data"))
    output = str(tmp_path / "out")
    results = run_ner.main(["--model_name_or_path", model, "--data_dir", data, "--output_dir", output] + FAST + flags)
    expected_bf16 = "--allow_emulated_bf16" in flags or resolve_precision("auto", "cpu") == torch.bfloat16
    with open(os.path.join(output, "all_results.json")) as handle:
        assert json.load(handle)["bf16"] is expected_bf16 is results["bf16"]
    assert results["test_f1"] > 0.8 and results["eval_f1"] > 0.8
