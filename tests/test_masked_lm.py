"""Masked-only prediction: exact loss/gradients vs the standard BertForMaskedLM head, standard checkpoints."""

import copy
import logging

import pytest
import torch
from transformers import (
    AutoModelForMaskedLM,
    BertConfig,
    BertForMaskedLM,
    RobertaConfig,
    RobertaForMaskedLM,
)
from transformers.loss.loss_utils import ForMaskedLMLoss

from bioptimus_hf.pretraining.masked_lm import (
    disable_masked_only_prediction,
    enable_masked_only_prediction,
    is_masked_only_prediction_enabled,
    supports_masked_only_prediction,
)

VOCAB = 97
BATCH, SEQ = 4, 24


def tiny_bert(seed=0):
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        # No dropout: both heads must see the same encoder output (train mode is kept for gradients).
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForMaskedLM(config)
    # Non-zero output bias, so a bias that was dropped or untied would show in the loss.
    with torch.no_grad():
        model.cls.predictions.bias.normal_(0, 0.5)
    return model.float()


def batch(seed=1, rate=0.2, padded=True):
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, VOCAB, (BATCH, SEQ), generator=gen)
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    if padded:  # last two rows are shorter; padding is never labelled
        attention_mask[2, 15:] = 0
        attention_mask[3, 7:] = 0
        input_ids[attention_mask == 0] = 0
    selected = (torch.rand(BATCH, SEQ, generator=gen) < rate) & attention_mask.bool()
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    input_ids = torch.where(selected, torch.full_like(input_ids, 4), input_ids)  # 4 plays [MASK]
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def loss_and_grads(model, inputs, **kwargs):
    model.zero_grad(set_to_none=True)
    out = model(**inputs, **kwargs)
    out.loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return out, grads


def assert_grads_close(grads_a, grads_b):
    assert grads_a.keys() == grads_b.keys()
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], atol=1e-5, rtol=1e-4, msg=name)


def test_supports_bert_and_rejects_other_heads(caplog):
    assert supports_masked_only_prediction(tiny_bert())
    roberta = RobertaForMaskedLM(
        RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    )
    assert not supports_masked_only_prediction(roberta)

    class CustomForward(BertForMaskedLM):
        def forward(self, *args, **kwargs):
            return super().forward(*args, **kwargs)

    assert not supports_masked_only_prediction(CustomForward(tiny_bert().config))

    # Fallback: same object, standard path, a warning naming the class.
    with caplog.at_level(logging.WARNING):
        assert enable_masked_only_prediction(roberta) is roberta
    assert "RobertaForMaskedLM" in caplog.text
    assert not is_masked_only_prediction_enabled(roberta)
    inputs = batch()
    out = roberta(**inputs)
    assert out.logits.shape == (BATCH, SEQ, VOCAB)


@pytest.mark.parametrize("padded", [True, False])
def test_loss_and_gradients_equal_standard_head(padded):
    standard = tiny_bert()
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    assert type(fast) is BertForMaskedLM and is_masked_only_prediction_enabled(fast)
    inputs = batch(padded=padded)
    n_labelled = int((inputs["labels"] != -100).sum())
    assert 0 < n_labelled < BATCH * SEQ

    ref, ref_grads = loss_and_grads(standard, inputs)
    out, grads = loss_and_grads(fast, inputs)
    torch.testing.assert_close(out.loss, ref.loss, atol=1e-5, rtol=0)
    assert_grads_close(grads, ref_grads)
    # Gradients reach the tied decoder/embedding matrix, the output bias and the head transform.
    for name in ("bert.embeddings.word_embeddings.weight", "cls.predictions.bias", "cls.predictions.transform.dense.weight"):
        assert grads[name].abs().sum() > 0

    # Logits: labelled positions only, in the order of labels[labels != -100].
    labelled = inputs["labels"] != -100
    assert out.logits.shape == (n_labelled, VOCAB)
    torch.testing.assert_close(out.logits, ref.logits[labelled], atol=1e-5, rtol=1e-5)


def test_num_items_in_batch_follows_transformers_masked_lm_loss():
    standard = tiny_bert()
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    inputs = batch()
    n_labelled = (inputs["labels"] != -100).sum()

    # One micro-batch per step: the Trainer passes the batch's own label count -> equals the mean.
    ref, ref_grads = loss_and_grads(standard, inputs)
    out, grads = loss_and_grads(fast, inputs, num_items_in_batch=n_labelled)
    torch.testing.assert_close(out.loss, ref.loss, atol=1e-5, rtol=0)
    assert_grads_close(grads, ref_grads)

    # Gradient accumulation: the count covers all micro-batches -> sum / count, exactly what
    # transformers' ForMaskedLMLoss computes from the standard head's full logits.
    total = n_labelled * 3
    standard.zero_grad(set_to_none=True)
    full_logits = standard(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
    ref_loss = ForMaskedLMLoss(full_logits, inputs["labels"], VOCAB, num_items_in_batch=total)
    ref_loss.backward()
    ref_grads = {n: p.grad.clone() for n, p in standard.named_parameters() if p.grad is not None}
    out, grads = loss_and_grads(fast, inputs, num_items_in_batch=total)
    torch.testing.assert_close(out.loss, ref_loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(out.loss * 3, ref.loss, atol=1e-5, rtol=0)
    assert_grads_close(grads, ref_grads)
    # A plain int works too (custom trainers pass ints).
    out_int = fast(**inputs, num_items_in_batch=int(total))
    torch.testing.assert_close(out_int.loss, ref_loss, atol=1e-5, rtol=0)


def test_without_labels_runs_standard_path_and_tuple_output():
    standard = tiny_bert()
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    inputs = batch()
    del inputs["labels"]
    with torch.no_grad():
        ref = standard(**inputs)
        out = fast(**inputs)
    assert out.loss is None
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-6, rtol=0)
    assert out.logits.shape == (BATCH, SEQ, VOCAB)

    with torch.no_grad():
        loss, logits = fast(**batch(), return_dict=False)
    assert loss.ndim == 0 and logits.ndim == 2


def test_save_pretrained_gives_plain_bert_checkpoint(tmp_path):
    standard = tiny_bert()
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    # Train one step on the fast path so the saved weights differ from the initialisation.
    optimizer = torch.optim.SGD(fast.parameters(), lr=0.5)
    fast(**batch()).loss.backward()
    optimizer.step()
    assert fast.cls.predictions.decoder.weight is fast.bert.embeddings.word_embeddings.weight

    fast.save_pretrained(tmp_path)
    reloaded = AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert type(reloaded) is BertForMaskedLM
    assert reloaded.config.architectures == ["BertForMaskedLM"]
    assert not is_masked_only_prediction_enabled(reloaded) and "forward" not in vars(reloaded)
    assert reloaded.cls.predictions.decoder.weight is reloaded.bert.embeddings.word_embeddings.weight

    saved, loaded = fast.state_dict(), reloaded.state_dict()
    assert saved.keys() == loaded.keys()
    for key in saved:
        torch.testing.assert_close(loaded[key], saved[key], atol=0, rtol=0, msg=key)
    assert not torch.equal(saved["cls.predictions.bias"], standard.state_dict()["cls.predictions.bias"])

    # Standard-path outputs of the reloaded plain model equal those of the trained model.
    inputs = batch(seed=7)
    fast.eval()
    reloaded.eval()
    with torch.no_grad():
        disable_masked_only_prediction(fast)
        assert not is_masked_only_prediction_enabled(fast)
        expected = fast(**inputs)
        got = reloaded(**inputs)
    torch.testing.assert_close(got.logits, expected.logits, atol=1e-6, rtol=0)
    torch.testing.assert_close(got.loss, expected.loss, atol=1e-6, rtol=0)


def test_enable_is_idempotent_and_deepcopy_rebinds():
    model = enable_masked_only_prediction(tiny_bert())
    assert enable_masked_only_prediction(model) is model
    clone = copy.deepcopy(model)
    assert clone.forward.__self__ is clone
    inputs = batch()
    with torch.no_grad():
        clone.cls.predictions.bias.normal_(0, 2.0)  # changing the copy must not change the original
        a, b = model(**inputs).loss, clone(**inputs).loss
    assert not torch.allclose(a, b)


def _train_one_sgd_step(model, rows, batch_size, accumulation, output_dir):
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation,
        max_steps=1,
        learning_rate=0.1,
        optim="sgd",
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=0.0,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )

    def stack(features):
        return {key: torch.stack([f[key] for f in features]) for key in features[0]}

    result = Trainer(model=model, args=args, train_dataset=rows, data_collator=stack).train()
    return result.training_loss


def test_trainer_gradient_accumulation_matches_full_batch(tmp_path):
    # Rows with different label counts: a mean of per-micro-batch means would differ from the full mean.
    inputs = batch(rate=0.3)
    rows = [{key: value[i] for key, value in inputs.items()} for i in range(BATCH)]
    assert len({int((row["labels"] != -100).sum()) for row in rows}) > 1

    base = tiny_bert()
    full = copy.deepcopy(base)  # standard head, one batch of 4, no accumulation
    full_loss = _train_one_sgd_step(full, rows, BATCH, 1, tmp_path / "full")
    accumulated = enable_masked_only_prediction(copy.deepcopy(base))  # 2 micro-batches of 2
    accumulated_loss = _train_one_sgd_step(accumulated, rows, BATCH // 2, 2, tmp_path / "ga")

    assert accumulated_loss == pytest.approx(full_loss, abs=1e-5)
    for (name, p_full), p_acc in zip(full.named_parameters(), accumulated.parameters()):
        torch.testing.assert_close(p_acc, p_full, atol=1e-6, rtol=1e-5, msg=name)
    assert not torch.equal(full.cls.predictions.bias, base.cls.predictions.bias)


def test_run_pretraining_masked_only_flag_learns_the_same(monkeypatch, tmp_path, tiny_model_dir):
    """End to end: the default (masked-only) run and --masked_only_prediction false give the same model."""
    import json
    import sys

    import run_pretraining
    from conftest import corpus_lines

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(300)) + "\n")
    outputs = {}
    for flag in ("true", "false"):
        out = tmp_path / f"out_{flag}"
        argv = ["run_pretraining.py", "--model_name_or_path", tiny_model_dir, "--train_file", corpus,
                "--output_dir", out, "--do_train", "--max_steps", 4, "--phase_steps", 2, 2,
                "--per_device_train_batch_size", 4, "--max_seq_length", 32, "--report_to", "none",
                "--validation_split_percentage", 0, "--logging_steps", 1, "--disable_tqdm", "true",
                "--save_strategy", "no", "--seed", 3, "--masked_only_prediction", flag,
                "--curriculum", _two_phase_curriculum(tmp_path)]
        monkeypatch.setattr(sys, "argv", [str(a) for a in argv])
        run_pretraining.main()
        outputs[flag] = out

    infos = {flag: json.loads((out / "releases" / "v0.2" / "bioptimus_phase.json").read_text()) for flag, out in outputs.items()}
    assert infos["true"]["run"]["masked_only_prediction"] is True
    assert infos["false"]["run"]["masked_only_prediction"] is False
    fast = AutoModelForMaskedLM.from_pretrained(outputs["true"] / "releases" / "v0.2")
    plain = AutoModelForMaskedLM.from_pretrained(outputs["false"] / "releases" / "v0.2")
    initial = AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    assert type(fast) is BertForMaskedLM
    for (name, p_fast), p_plain, p_init in zip(fast.named_parameters(), plain.parameters(), initial.parameters()):
        torch.testing.assert_close(p_fast, p_plain, atol=1e-5, rtol=1e-4, msg=name)
    assert not torch.equal(fast.cls.predictions.transform.dense.weight, initial.cls.predictions.transform.dense.weight)


def _two_phase_curriculum(tmp_path):
    path = tmp_path / "curriculum.json"
    path.write_text(
        '[{"version": "0.1", "masking_unit": "token", "masking_rate": 0.15, "corruption": true},'
        ' {"version": "0.2", "masking_unit": "word", "masking_rate": 0.2, "corruption": true}]'
    )
    return path
