"""Masked-only prediction: exact loss/gradients vs the standard head (BERT in depth, then every architecture we
serve), standard checkpoints, the Trainer and run_pretraining.py."""

import copy
import logging

import pytest
import torch
from transformers import AutoModelForMaskedLM, BertForMaskedLM
from transformers.loss.loss_utils import ForMaskedLMLoss
from transformers.modeling_outputs import MaskedLMOutput

from bioptimus_hf.pretraining.masked_lm import (
    disable_masked_only_prediction,
    enable_masked_only_prediction,
    is_masked_only_prediction_enabled,
    masked_only_status,
    supports_masked_only_prediction,
)
from helpers.masked_lm import (
    ARCHITECTURES,
    BATCH,
    SEQ,
    VOCAB,
    architecture_batch,
    architectures,
    batch,
    tiny_bert,
    tiny_model,
    tolerances,
)
from helpers.pretraining import curriculum_run_flags


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


def test_supports_bert_and_a_subclass_that_keeps_its_forward():
    assert supports_masked_only_prediction(tiny_bert())

    class KeepsForward(BertForMaskedLM):
        pass

    # The forward that runs is BertForMaskedLM's own: served like it, through its `cls`.
    model = enable_masked_only_prediction(KeepsForward(tiny_bert().config))
    assert masked_only_status(model) == (
        "on for KeepsForward: the labelled rows enter its head at `cls`, logits from `cls`"
    )


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
    for name in (
        "bert.embeddings.word_embeddings.weight",
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
    ):
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


def test_enable_is_idempotent_and_a_deepcopy_has_its_own_hooks():
    model = enable_masked_only_prediction(tiny_bert())
    assert enable_masked_only_prediction(model) is model
    assert model(**batch()).logits.ndim == 2  # enabled twice: still one gather
    clone = copy.deepcopy(model)
    assert is_masked_only_prediction_enabled(clone)
    inputs = batch()
    with torch.no_grad():
        clone.cls.predictions.bias.normal_(0, 2.0)  # changing the copy must not change the original
        a, b = model(**inputs).loss, clone(**inputs).loss
    assert not torch.allclose(a, b)
    # Disabling the copy removes the copy's hooks, not the original's.
    disable_masked_only_prediction(clone)
    assert clone(**inputs).logits.shape == (BATCH, SEQ, VOCAB)
    assert model(**inputs).logits.ndim == 2 and is_masked_only_prediction_enabled(model)


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
    from helpers import corpus_lines

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(300)) + "\n")
    outputs = {}
    for flag in ("true", "false"):
        out = tmp_path / f"out_{flag}"
        argv = [
            "run_pretraining.py",
            *curriculum_run_flags(
                tiny_model_dir,
                corpus,
                out,
                (2, 2),
                logging_steps=1,
                seed=3,
                masked_only_prediction=flag,
                curriculum=_two_phase_curriculum(tmp_path),
            ),
        ]
        monkeypatch.setattr(sys, "argv", [str(a) for a in argv])
        run_pretraining.main()
        outputs[flag] = out

    infos = {
        flag: json.loads((out / "releases" / "v0.2" / "bioptimus_phase.json").read_text())
        for flag, out in outputs.items()
    }
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


def _standard_and_reference(model, inputs, num_items_in_batch=None):
    """(output, gradients) of the standard head in float32 and in float64, with the model's own loss, or
    transformers' ForMaskedLMLoss on its full logits when ``num_items_in_batch`` is given."""
    results = []
    for dtype in (torch.float32, torch.float64):
        copy_ = copy.deepcopy(model).to(dtype)
        if num_items_in_batch is None:
            results.append(loss_and_grads(copy_, inputs))
            continue
        out = copy_(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
        out.loss = ForMaskedLMLoss(out.logits, inputs["labels"], VOCAB, num_items_in_batch=num_items_in_batch)
        out.loss.backward()
        results.append((out, {n: p.grad.clone() for n, p in copy_.named_parameters() if p.grad is not None}))
    return results


def _assert_as_exact_as_the_standard_head(out, grads, standard, reference, model, what):
    """Masked-only (float32) against the float64 reference: the loss and the whole gradient within the float32
    bound (which the standard float32 head meets too); each parameter's gradient no further from the reference
    than the standard float32 head's plus the bound. Per parameter the standard head itself can miss the bound:
    query/key gradients at initialisation are sums that nearly cancel (attention is almost uniform), so float32
    loses relative accuracy there whichever head runs (ELECTRA's first query: 3e-4)."""
    from bioptimus_hf.testing.numerics import assert_close_normwise, normwise_relative_error

    (plain, plain_grads), (exact, exact_grads) = standard, reference
    loss_tolerance, gradient_tolerance = tolerances(model)
    for name, (o, g) in {"masked-only": (out, grads), "standard": (plain, plain_grads)}.items():
        assert_close_normwise(o.loss, exact.loss, loss_tolerance, f"{what} {name}: loss")
        assert g.keys() == exact_grads.keys()
        assert_close_normwise(
            torch.cat([g[n].double().flatten() for n in exact_grads]),
            torch.cat([v.double().flatten() for v in exact_grads.values()]),
            gradient_tolerance,
            f"{what} {name}: all gradients",
        )
    for name, expected in exact_grads.items():
        expected = expected.double()
        own = (grads[name].double() - expected).norm()
        theirs = (plain_grads[name].double() - expected).norm()
        assert own <= theirs + gradient_tolerance * expected.norm(), (
            f"{what}: gradient of {name}: error {own:.3e} vs the standard head's {theirs:.3e} "
            f"(relative {normwise_relative_error(grads[name], expected):.3e})"
        )


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_head_is_reached_through_the_familys_modules(name):
    model = enable_masked_only_prediction(tiny_model(name))
    assert is_masked_only_prediction_enabled(model) and "forward" not in vars(model)
    entry, logits_from = architectures()[name][1]
    assert masked_only_status(model) == (
        f"on for {type(model).__name__}: the labelled rows enter its head at `{entry}`, logits from `{logits_from}`"
    )


@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_architecture_loss_and_gradients_equal_standard_head(name, padded):
    from bioptimus_hf.testing.numerics import assert_close_normwise

    standard = tiny_model(name)
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    assert type(fast) is type(standard) and is_masked_only_prediction_enabled(fast)
    inputs = architecture_batch(standard, padded=padded)
    labelled = inputs["labels"] != -100

    plain, reference = _standard_and_reference(standard, inputs)
    out, grads = loss_and_grads(fast, inputs)
    assert out.loss.dtype == torch.float32 and out.logits.dtype == torch.float32
    _assert_as_exact_as_the_standard_head(out, grads, plain, reference, standard, name)
    # Logits: labelled positions only, in the order of labels[labels != -100].
    assert out.logits.shape == (int(labelled.sum()), VOCAB)
    assert_close_normwise(out.logits, reference[0].logits[labelled], tolerances(standard)[0], f"{name}: logits")


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_architecture_num_items_in_batch_follows_masked_lm_loss(name):
    standard = tiny_model(name)
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    inputs = architecture_batch(standard)
    total = (inputs["labels"] != -100).sum() * 3  # the count of three accumulated micro-batches
    # Reference: transformers' ForMaskedLMLoss (sum / num_items_in_batch) on the standard head's full logits.
    plain, reference = _standard_and_reference(standard, inputs, num_items_in_batch=total)
    out, grads = loss_and_grads(fast, inputs, num_items_in_batch=total)
    _assert_as_exact_as_the_standard_head(out, grads, plain, reference, standard, name)


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_architecture_checkpoint_reloads_as_its_own_class(name, tmp_path):
    fast = enable_masked_only_prediction(tiny_model(name))
    initial = copy.deepcopy(fast.state_dict())
    optimizer = torch.optim.SGD(fast.parameters(), lr=0.5)
    fast(**architecture_batch(fast)).loss.backward()
    optimizer.step()

    fast.save_pretrained(tmp_path)
    reloaded = AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert type(reloaded) is type(fast)
    assert reloaded.config.architectures == [type(fast).__name__]
    assert not is_masked_only_prediction_enabled(reloaded) and "forward" not in vars(reloaded)
    saved, loaded = fast.state_dict(), reloaded.state_dict()
    assert saved.keys() == loaded.keys() == initial.keys()
    for key in saved:
        torch.testing.assert_close(loaded[key], saved[key], atol=0, rtol=0, msg=key)
    assert any(not torch.equal(saved[key], initial[key]) for key in saved)  # the step trained the model

    inputs = architecture_batch(fast, seed=7)
    fast.eval()
    reloaded.eval()
    with torch.no_grad():
        masked_only = fast(**inputs)
        disable_masked_only_prediction(fast)
        expected = fast(**inputs)
        got = reloaded(**inputs)
    torch.testing.assert_close(got.logits, expected.logits, atol=0, rtol=0)
    torch.testing.assert_close(got.loss, expected.loss, atol=0, rtol=0)
    # The reloaded model serves masked-only prediction like the one that was saved.
    enable_masked_only_prediction(reloaded)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**inputs).loss, masked_only.loss, atol=0, rtol=0)


def test_modernbert_equals_its_own_sparse_prediction():
    """ModernBERT's published masked-only path (config.sparse_prediction) computes what ours does."""
    standard = tiny_model("modernbert")
    sparse = copy.deepcopy(standard)
    sparse.sparse_prediction = True  # the attribute its forward reads (set from the config at construction)
    fast = enable_masked_only_prediction(copy.deepcopy(standard))
    inputs = architecture_batch(standard)
    total = (inputs["labels"] != -100).sum() * 2
    published, published_grads = loss_and_grads(sparse, inputs, num_items_in_batch=total)
    out, grads = loss_and_grads(fast, inputs, num_items_in_batch=total)
    torch.testing.assert_close(out.logits, published.logits, atol=0, rtol=0)
    torch.testing.assert_close(out.loss, published.loss, atol=0, rtol=0)
    assert grads.keys() == published_grads.keys()
    for key in grads:
        torch.testing.assert_close(grads[key], published_grads[key], atol=0, rtol=0, msg=key)
    # Ours leaves the config alone: a saved checkpoint gives full logits to its users.
    assert fast.config.sparse_prediction is False


def test_a_decoder_replaced_after_enabling_still_gives_the_loss():
    """resize_token_embeddings replaces an untied decoder, the module whose output is DistilBERT's logits: the loss
    is then computed after the forward, from the same gathered rows."""
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    torch.manual_seed(0)
    config = DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64, dropout=0.0, attention_dropout=0.0
    )
    config.tie_word_embeddings = False
    fast = enable_masked_only_prediction(DistilBertForMaskedLM(config))
    decoder = fast.get_output_embeddings()
    fast.resize_token_embeddings(VOCAB + 3)
    assert fast.get_output_embeddings() is not decoder
    standard = disable_masked_only_prediction(copy.deepcopy(fast))
    inputs = batch()
    out, reference = fast(**inputs), standard(**inputs)
    labelled = inputs["labels"] != -100
    assert out.logits.shape == (int(labelled.sum()), VOCAB + 3)
    torch.testing.assert_close(out.loss, reference.loss, atol=1e-5, rtol=0)


class _SmoothedLossBert(BertForMaskedLM):
    """Overrides forward with another loss: refused, as every override of a known forward is."""

    def forward(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        out = super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        if labels is not None:
            out.loss = torch.nn.functional.cross_entropy(
                out.logits.view(-1, VOCAB), labels.view(-1), label_smoothing=0.1
            )
        return out


class _ScaledHiddenBert(BertForMaskedLM):
    """Computes something between the encoder and the head, in its own forward: refused."""

    def forward(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        hidden = self.bert(input_ids, attention_mask=attention_mask, **kwargs)[0]
        logits = self.cls(hidden * 0.5)
        loss = None if labels is None else torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))
        return MaskedLMOutput(loss=loss, logits=logits)


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(
        GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    )


@pytest.mark.parametrize(
    "make, reason",
    [
        (_gpt2, "its forward (GPT2LMHeadModel.forward) is none of the masked LMs whose head is known"),
        (lambda: _SmoothedLossBert(tiny_bert().config), "overrides its masked LM's forward"),
        (lambda: _ScaledHiddenBert(tiny_bert().config), "overrides its masked LM's forward"),
    ],
    ids=["causal-lm", "custom-loss", "op-between-encoder-and-head"],
)
def test_unsupported_model_warns_and_keeps_the_standard_head(make, reason, caplog):
    from bioptimus_hf.pretraining.masked_lm import unsupported_reason

    torch.manual_seed(0)
    model = make()
    assert reason in unsupported_reason(model)
    before = copy.deepcopy(model.state_dict())
    with caplog.at_level(logging.WARNING):
        assert enable_masked_only_prediction(model) is model
    assert type(model).__name__ in caplog.text and reason in caplog.text
    assert not is_masked_only_prediction_enabled(model) and "forward" not in vars(model)
    assert all(torch.equal(before[key], value) for key, value in model.state_dict().items())
    inputs = batch()
    with torch.no_grad():
        out = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    assert out.logits.shape == (BATCH, SEQ, VOCAB)


def test_run_pretraining_serves_a_roberta_and_records_it(monkeypatch, tmp_path, tiny_tokenizer, caplog):
    """A non-BERT masked LM through run_pretraining.py: masked-only prediction active (logged and recorded), and
    the releases are checkpoints of its own class."""
    import json
    import sys

    from transformers import RobertaConfig, RobertaForMaskedLM

    import run_pretraining
    from helpers import corpus_lines

    torch.manual_seed(0)
    model_dir = tmp_path / "tiny_roberta"
    RobertaForMaskedLM(
        RobertaConfig(
            vocab_size=len(tiny_tokenizer),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            pad_token_id=tiny_tokenizer.pad_token_id,
        )
    ).save_pretrained(model_dir)
    tiny_tokenizer.save_pretrained(model_dir)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(200)) + "\n")
    out = tmp_path / "out"
    argv = [
        "run_pretraining.py",
        *curriculum_run_flags(
            model_dir,
            corpus,
            out,
            (1, 1),
            use_cpu=True,
            bf16=False,
            curriculum=_two_phase_curriculum(tmp_path),
            log_level="info",  # the run's own INFO lines, as a user asks for them
        ),
    ]
    monkeypatch.setattr(sys, "argv", [str(a) for a in argv])
    with caplog.at_level(logging.INFO):
        run_pretraining.main()
    assert (
        "masked-only prediction: on for RobertaForMaskedLM: the labelled rows enter its head at `lm_head`"
        in caplog.text
    )
    assert "cannot serve" not in caplog.text
    for version in ("v0.1", "v0.2"):
        info = json.loads((out / "releases" / version / "bioptimus_phase.json").read_text())
        assert info["run"]["masked_only_prediction"] is True
        release = AutoModelForMaskedLM.from_pretrained(out / "releases" / version)
        assert type(release) is RobertaForMaskedLM and release.config.architectures == ["RobertaForMaskedLM"]


# ------------------------------------------------------------------------------------------ static shapes
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_static_masked_positions_give_the_unpadded_loss_and_gradients(name):
    """Gathering at `masked_positions` padded with -1 (the collator's static shape) gives the loss and gradients
    of the boolean gather: padding rows add nothing; logits have one row per entry, real rows first."""
    from bioptimus_hf.pretraining.static_shapes import masked_positions

    model = enable_masked_only_prediction(tiny_model(name))
    inputs = architecture_batch(model)
    # Padding entries gather row 0: label it, so a padding row that kept its target would count it again.
    inputs["labels"][0, 0] = 9
    labelled = inputs["labels"] != -100
    count = int(labelled.sum())
    positions = masked_positions(inputs["labels"], bucket=count + 21)  # over a third of the rows are padding
    assert positions.shape == (count + 21,) and (positions[count:] == -1).all()
    loss_tolerance, gradient_tolerance = tolerances(model)
    for num_items_in_batch in (None, labelled.sum() * 2):
        extra = {} if num_items_in_batch is None else {"num_items_in_batch": num_items_in_batch}
        dynamic, dynamic_grads = loss_and_grads(model, inputs, **extra)
        static, static_grads = loss_and_grads(model, {**inputs, "masked_positions": positions}, **extra)
        from bioptimus_hf.testing.numerics import assert_close_normwise

        assert_close_normwise(static.loss, dynamic.loss, loss_tolerance, f"{name}: loss")
        assert static_grads.keys() == dynamic_grads.keys()
        for key in static_grads:
            assert_close_normwise(
                static_grads[key], dynamic_grads[key], gradient_tolerance, f"{name}: gradient of {key}"
            )
        assert static.logits.shape == (count + 21, VOCAB)
        assert_close_normwise(static.logits[:count], dynamic.logits, loss_tolerance, f"{name}: logits")


@pytest.mark.compile
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_static_masked_positions_compile_one_graph_per_bucket(name):
    """Under torch.compile the whole masked-only forward, its loss included, is one graph for every architecture (no
    graph break), and with static marks each bucket compiles once: going back to an earlier bucket recompiles
    nothing. The `eager` backend: what dynamo captures does not depend on the backend, and it costs no code
    generation."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from bioptimus_hf.pretraining.static_shapes import mark_static, masked_positions

    model = enable_masked_only_prediction(tiny_model(name))
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend="eager")
    graphs = []
    for bucket, seed in [(40, 1), (40, 2), (56, 3), (56, 4), (40, 5)]:
        inputs = architecture_batch(model, seed=seed)
        inputs["masked_positions"] = masked_positions(inputs["labels"], bucket)
        mark_static(inputs)
        with torch.no_grad():
            eager = model(**inputs).loss
            out = compiled(**inputs)
        torch.testing.assert_close(out.loss, eager, atol=0, rtol=0)  # the eager backend runs the same kernels
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs == [1, 1, 2, 2, 2]
    assert not counters["graph_break"]
    torch._dynamo.reset()
