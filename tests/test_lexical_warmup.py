"""The lexical warm-up before the curriculum: its place in the step budget, the parameters it trains on every
architecture masked-only prediction serves, a bit-for-bit frozen body, its learning-rate schedule, resume inside and
across it, run_pretraining.py (float32, bf16, torch.compile) with its records and cards, DDP, and the refusals."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from safetensors.torch import load_file
from transformers import AutoTokenizer, TrainingArguments, default_data_collator

import run_pretraining
from bioptimus_hf.pretraining.callback import describe_schedule_change
from bioptimus_hf.pretraining.lexical_warmup import (
    LexicalWarmup,
    LexicalWarmupTrainer,
    LexicalWarmupUnsupported,
    check_training_arguments,
    lexical_parameters,
)
from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction
from bioptimus_hf.pretraining.phases import Curriculum, PhaseSchedule, resolve_phase_steps
from bioptimus_hf.releases.record import LexicalWarmupFacts, ReleaseInfo, RunFacts
from helpers import corpus_lines, python_path, run_launcher, run_script
from helpers.masked_lm import ARCHITECTURES, architecture_batch, tiny_model
from phase_probe import probe_dataset
from warmup_probe import run_warmup_probe, tiny_bert


# ------------------------------------------------------------------------------------------ the step budget
def test_the_warmup_comes_out_of_the_budget_and_the_phases_share_the_rest():
    schedule = Curriculum(lexical_warmup_steps=0.1).resolve(684)  # the CPU study's arms
    assert schedule.lexical_warmup_steps == 68 and schedule.max_steps == 684
    assert list(schedule.step_counts) == resolve_phase_steps([0.1, 0.2, 0.3, 0.4], 616) and schedule.ends[-1] == 684
    assert schedule.start_of(0) == 68
    assert [schedule.phase_at(s) for s in (0, 67, 68)] == [0, 0, 0]  # the warm-up masks as the first phase
    assert schedule.in_lexical_warmup(67) and not schedule.in_lexical_warmup(68)
    counted = Curriculum(phase_steps=(2, 2, 2, 2), lexical_warmup_steps=4).resolve(12)
    assert counted.ends == [6, 8, 10, 12] and counted.step_counts == (2, 2, 2, 2)
    assert Curriculum(lexical_warmup_steps=3).only("0.4").resolve(10).ends == [10]
    assert "lexical warm-up=4 steps (v0.1 masking)" in counted.describe()
    # Stored in checkpoints; a checkpoint from before the warm-up existed had none.
    assert PhaseSchedule.from_dict(counted.to_dict()) == counted
    old = counted.to_dict()
    del old["lexical_warmup_steps"]
    assert PhaseSchedule.from_dict(old).lexical_warmup_steps == 0
    assert "lexical warm-up steps 0 -> 4" in describe_schedule_change(PhaseSchedule.from_dict(old), counted)


@pytest.mark.parametrize(
    "warmup, phase_steps, message",
    [
        (12, None, "--lexical_warmup_steps 12 is 12 steps of a run of --max_steps 12: that leaves 0 steps"),
        (10, None, "--lexical_warmup_steps 10 is 10 steps .* leaves 2 steps for the 4 curriculum phase"),
        (0.99, None, "--lexical_warmup_steps 0.99 is 12 steps"),
        (0.01, None, "--lexical_warmup_steps 0.01 of --max_steps 12 is no step at all"),
        (2.5, None, "--lexical_warmup_steps 2.5: a number of steps must be whole"),
        (
            2,
            (3, 3, 3, 3),
            "add up to 12 steps but the run has max_steps=12 minus the 2 steps of --lexical_warmup_steps",
        ),
    ],
    ids=["all-of-it", "too-long", "fraction", "tiny-fraction", "not-whole", "with-phase-counts"],
)
def test_a_warmup_the_budget_cannot_hold_is_refused_naming_the_flag(warmup, phase_steps, message):
    curriculum = Curriculum(lexical_warmup_steps=warmup, **({"phase_steps": phase_steps} if phase_steps else {}))
    with pytest.raises(ValueError, match=message):
        curriculum.resolve(12)


# ------------------------------------------------------------------------------------------ the learning rate
def _linear(step, ramp, total):  # transformers' linear schedule, written out
    return step / max(1, ramp) if step < ramp else max(0.0, (total - step) / max(1, total - ramp))


def test_one_schedule_with_the_warmups_peak_then_the_curriculums():
    args = TrainingArguments(
        "unused", learning_rate=1e-3, warmup_steps=0.25, lr_scheduler_type="linear", max_steps=20, report_to="none"
    )
    factor = LexicalWarmup(4, learning_rate=5e-3).lr_lambda(args, 20)
    # Warm-up: 4 steps, a ramp of ceil(0.25 * 4) = 1, peak 5e-3; curriculum: 16 steps, a ramp of 4, peak 1e-3.
    expected = [5 * _linear(s, 1, 4) for s in range(4)] + [_linear(s - 4, 4, 16) for s in range(4, 20)]
    assert [factor(s) for s in range(20)] == pytest.approx(expected, abs=1e-12)
    assert max(factor(s) for s in range(4)) == pytest.approx(5.0)  # the warm-up's own peak (x --learning_rate)
    constant = TrainingArguments(
        "unused",
        learning_rate=1e-3,
        warmup_steps=2,
        lr_scheduler_type="constant_with_warmup",
        max_steps=10,
        report_to="none",
    )
    factor = LexicalWarmup(0.4).lr_lambda(constant, 10)  # peak: --learning_rate
    assert [factor(s) for s in range(10)] == pytest.approx([0, 0.5, 1, 1, 0, 0.5, 1, 1, 1, 1])


def test_training_arguments_the_warmup_cannot_run_under_are_refused():
    with pytest.raises(LexicalWarmupUnsupported, match="--ddp_find_unused_parameters true"):
        check_training_arguments(TrainingArguments("unused", ddp_find_unused_parameters=False, report_to="none"))
    with pytest.raises(LexicalWarmupUnsupported, match="reduce_lr_on_plateau"):
        check_training_arguments(
            TrainingArguments(
                "unused", lr_scheduler_type="reduce_lr_on_plateau", eval_strategy="steps", report_to="none"
            )
        )
    args = TrainingArguments("unused", report_to="none")
    check_training_arguments(args)
    assert args.ddp_find_unused_parameters is True  # the frozen body gets no gradient in the warm-up


# ------------------------------------------------------------------------------------------ what trains
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_only_the_lexical_parameters_train_in_the_warmup_on_every_architecture(name, tmp_path):
    """No family's names: the input embeddings, everything outside the base model (the MLM head, tied decoder and
    bias included) and the embedding block's norms; nothing else. Trained for 2 warm-up
    steps of 4, the rest is bit for bit the start; after the warm-up everything trains."""
    model = enable_masked_only_prediction(tiny_model(name))
    # The parameters a plain training step gives a gradient (all of them, unless an architecture leaves one unused).
    model(**architecture_batch(model, seed=99)).loss.backward()
    used = sorted(n for n, p in model.named_parameters() if p.grad is not None)
    model.zero_grad(set_to_none=True)
    lexical = lexical_parameters(model)
    ids = {id(p) for p in lexical.parameters}
    embeddings = model.get_input_embeddings()
    assert id(embeddings.weight) in ids and id(model.get_output_embeddings().weight) in ids
    base = model.base_model
    assert all(id(p) in ids for p in model.parameters() if not any(p is q for q in base.parameters()))
    block_name = next(n for n, m in model.named_modules() if m is embeddings).rpartition(".")[0]
    block = model.get_submodule(block_name)
    norms = [m for m in block.children() if "norm" in type(m).__name__.lower()]
    assert norms and all(id(p) in ids for m in norms for p in m.parameters())
    in_base = [n for n, p in base.named_parameters() if id(p) in ids]
    assert all(n.startswith(block_name.partition(".")[2] or block_name) for n in in_base), in_base
    assert not any("position" in n or "token_type" in n or "project" in n or "proj" in n for n in in_base), in_base
    assert lexical.trained_count == sum(p.numel() for p in lexical.parameters) < lexical.total_count

    rows = []
    for seed in range(16):
        inputs = architecture_batch(model, seed=seed)
        rows += [{key: value[i] for key, value in inputs.items()} for i in range(len(inputs["input_ids"]))]
    from warmup_probe import WarmupRecorder

    recorder = WarmupRecorder(warmup_steps=2)
    args = TrainingArguments(
        str(tmp_path),
        max_steps=4,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        warmup_steps=0,
        weight_decay=0.01,
        report_to="none",
        save_strategy="no",
        remove_unused_columns=False,
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = LexicalWarmupTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        data_collator=default_data_collator,
        callbacks=[recorder],
        lexical_warmup=LexicalWarmup(2, learning_rate=1e-2),
    )
    trainer.train()
    lexical_names = {n for n, p in model.named_parameters() if id(p) in ids}
    for name_, before in recorder.start.items():
        after = recorder.at_warmup_end[name_]
        if name_ in lexical_names:
            assert not torch.equal(before, after), f"{name_} did not train in the warm-up"
        else:
            assert torch.equal(before, after), f"{name_} changed in the warm-up"
    assert recorder.with_gradient[1] == recorder.with_gradient[2] == sorted(lexical_names)
    assert recorder.with_gradient[3] == recorder.with_gradient[4] == used
    assert all(p.requires_grad for p in model.parameters())  # unfrozen at the warm-up's end


def test_a_model_without_a_head_outside_its_base_model_is_refused():
    bare = tiny_model("bert").bert  # a BertModel: its own base model, no MLM head
    with pytest.raises(LexicalWarmupUnsupported, match="trains the MLM head of BertModel"):
        lexical_parameters(bare)


# ------------------------------------------------------------------------------------------ the Trainer, in depth
@pytest.fixture(scope="module")
def probe_data(tiny_tokenizer):
    return probe_dataset(tiny_tokenizer, corpus_lines(400))


def test_warmup_freezes_the_body_bit_for_bit_then_the_curriculum_trains_everything(
    tiny_tokenizer, probe_data, tmp_path
):
    model = tiny_bert(tiny_tokenizer)
    lexical_names = {n for n, p in model.named_parameters() if lexical_parameters(model).contains(p)}
    assert lexical_names == {
        "bert.embeddings.word_embeddings.weight",
        "bert.embeddings.LayerNorm.weight",
        "bert.embeddings.LayerNorm.bias",
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
    }
    recorder, schedule, trainer = run_warmup_probe(
        model, tiny_tokenizer, probe_data, tmp_path, warmup_steps=4, phase_steps=[3, 3], max_steps=10
    )
    assert trainer.state.global_step == 10
    assert schedule.phase_history == [(0, "0.1"), (7, "0.2")]  # phase 1 after the warm-up, phase 2 at 4 + 3
    everything = sorted(n for n, _ in model.named_parameters())
    # Steps 1-4: gradients for the lexical parameters only; from step 5: for every parameter.
    assert all(recorder.with_gradient[s] == sorted(lexical_names) for s in range(1, 5))
    assert all(recorder.with_gradient[s] == everything for s in range(5, 11))
    # The body is bit for bit its start after the warm-up, with no AdamW state (no moments, no decay applied).
    for name, before in recorder.start.items():
        after = recorder.at_warmup_end[name]
        assert torch.equal(before, after) != (name in lexical_names), name
        assert recorder.optimizer_state_at_warmup_end[name] == (name in lexical_names), name
    final = dict(model.named_parameters())
    assert not torch.equal(
        final["bert.encoder.layer.0.output.dense.weight"], recorder.start["bert.encoder.layer.0.output.dense.weight"]
    )
    # The learning rate each step ran with (every param group the same): the warm-up's schedule at its own peak
    # (5e-3: 4 steps, a ramp of 1), then the curriculum's at --learning_rate (1e-3: 6 steps, a ramp of 2).
    expected = [5e-3 * _linear(s, 1, 4) for s in range(4)] + [1e-3 * _linear(s - 4, 2, 6) for s in range(4, 10)]
    for step in range(1, 11):
        assert recorder.learning_rates[step] == pytest.approx([expected[step - 1]] * 2, abs=1e-15), step
    logged = [e for e in trainer.state.log_history if "loss" in e]
    assert [e["lexical_warmup"] for e in logged] == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]


@pytest.fixture(scope="module")
def unbroken_run(tiny_tokenizer, probe_data, tmp_path_factory):
    """10 steps (4 of warm-up, phases of 3 and 3) with a checkpoint every 2 steps."""
    out = tmp_path_factory.mktemp("unbroken")
    recorder, _, trainer = run_warmup_probe(
        tiny_bert(tiny_tokenizer),
        tiny_tokenizer,
        probe_data,
        out,
        warmup_steps=4,
        phase_steps=[3, 3],
        max_steps=10,
        save_steps=2,
    )
    return out, recorder, {n: p.detach().clone() for n, p in trainer.model.named_parameters()}


@pytest.mark.parametrize("resume_at", [2, 4, 6], ids=["inside-the-warmup", "at-its-end", "after-it"])
def test_resume_inside_or_across_the_warmup_equals_the_unbroken_run(
    tiny_tokenizer, probe_data, tmp_path, resume_at, unbroken_run
):
    full_dir, unbroken, expected = unbroken_run
    resumed_dir = tmp_path / "resumed"
    shutil.copytree(full_dir / f"checkpoint-{resume_at}", resumed_dir / f"checkpoint-{resume_at}")
    resumed, schedule, trainer = run_warmup_probe(
        tiny_bert(tiny_tokenizer, seed=1),
        tiny_tokenizer,
        probe_data,
        resumed_dir,
        warmup_steps=4,
        phase_steps=[3, 3],
        max_steps=10,
        resume=str(resumed_dir / f"checkpoint-{resume_at}"),
    )
    assert sorted(resumed.learning_rates) == list(range(resume_at + 1, 11))
    for step in resumed.learning_rates:
        assert resumed.learning_rates[step] == unbroken.learning_rates[step]
        assert resumed.with_gradient[step] == unbroken.with_gradient[step]
    for name, parameter in trainer.model.named_parameters():
        assert torch.equal(parameter.detach(), expected[name]), name


# ------------------------------------------------------------------------------------------ run_pretraining.py
@pytest.fixture
def corpus(make_corpus):
    return make_corpus(600)


def _args(model_dir, corpus, out, *extra):
    return [
        "--model_name_or_path",
        model_dir,
        "--train_file",
        corpus,
        "--output_dir",
        out,
        "--do_train",
        "--max_steps",
        16,
        "--per_device_train_batch_size",
        4,
        "--max_seq_length",
        32,
        "--report_to",
        "none",
        "--max_eval_samples",
        16,
        "--logging_steps",
        1,
        "--disable_tqdm",
        "true",
        "--save_steps",
        4,
        "--learning_rate",
        5e-4,
        "--warmup_steps",
        0.25,
        "--lexical_warmup_steps",
        0.25,
        "--lexical_warmup_learning_rate",
        2e-3,
        *extra,
    ]


@pytest.mark.parametrize(
    "mode",
    [
        "float32",
        "bf16",
        pytest.param("compile", marks=pytest.mark.compile),
        "released",
    ],
)
def test_run_pretraining_warms_up_releases_the_curriculum_and_says_so(
    monkeypatch, tmp_path, tiny_model_dir, corpus, mode
):
    out = tmp_path / "out"
    extra = {
        "float32": [],
        "bf16": ["--bf16", "true", "--use_cpu", "true"],
        # aot_eager: AOTAutograd sees which parameters need a gradient; one phase, no evaluation: few graphs.
        "compile": [
            "--torch_compile",
            "true",
            "--torch_compile_backend",
            "aot_eager",
            "--use_cpu",
            "true",
            "--single_phase",
            "0.1",
            "--validation_split_percentage",
            0,
            "--max_steps",
            8,
            "--lexical_warmup_steps",
            4,
        ],
        "released": ["--lexical_warmup_release", "v0.0"],
    }[mode]
    if mode == "bf16":
        from transformers.utils import is_torch_bf16_available_on_device

        if not is_torch_bf16_available_on_device("cpu"):
            pytest.skip("this torch build cannot run bf16 on the CPU")
    if mode == "compile":
        torch._dynamo.reset()
        from torch._dynamo.utils import counters

        counters.clear()
    run_script(monkeypatch, run_pretraining, _args(tiny_model_dir, corpus, out, *extra))
    if mode == "compile":
        # One graph for the warm-up (the body frozen), one more at its end (requires_grad is in the guards).
        assert counters["stats"]["unique_graphs"] == 2, dict(counters["stats"])
        torch._dynamo.reset()
    start = load_file(tiny_model_dir / "model.safetensors")
    at_warmup_end = load_file(out / "checkpoint-4" / "model.safetensors")
    lexical = {
        "bert.embeddings.word_embeddings.weight",
        "bert.embeddings.LayerNorm.weight",
        "bert.embeddings.LayerNorm.bias",
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
    }
    assert lexical <= set(at_warmup_end)
    for name, tensor in at_warmup_end.items():
        assert torch.equal(tensor, start[name]) != (name in lexical), name
    final = load_file(out / "model.safetensors")
    assert not torch.equal(
        final["bert.encoder.layer.1.attention.self.query.weight"],
        start["bert.encoder.layer.1.attention.self.query.weight"],
    )
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = [e for e in history if "loss" in e]
    last = 8 if mode == "compile" else 16
    assert [e["step"] for e in logged] == list(range(1, last + 1))
    assert [e["lexical_warmup"] for e in logged] == [1] * 4 + [0] * (last - 4)
    assert all(e["curriculum_phase"] == 1 for e in logged[:3])  # the warm-up masks as phase 1
    assert max(e["learning_rate"] for e in logged[:4]) == pytest.approx(2e-3)  # the warm-up's own peak
    assert max(e["learning_rate"] for e in logged[4:]) == pytest.approx(5e-4)
    if mode == "compile":
        assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1"]
        return
    # Releases: v0.1..v0.4 and nothing for the warm-up unless asked; v0.1 is the end of phase 1, which starts at the
    # warm-up's end.
    released = mode == "released"
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.0"] * released + [
        "v0.1",
        "v0.2",
        "v0.3",
        "v0.4",
    ]
    first = ReleaseInfo.load(out / "releases" / "v0.1")
    assert (first.start_step, first.end_step, first.steps) == (4, 5, 1)  # 12 curriculum steps: 1/2/4/5
    assert ReleaseInfo.load(out / "releases" / "v0.4").end_step == 16
    facts = first.run.lexical_warmup
    assert (
        facts.steps,
        facts.learning_rate,
        facts.lr_scheduler_type,
        facts.lr_warmup_steps,
        facts.masking_version,
    ) == (4, 2e-3, "linear", 1, "0.1")
    assert {name.split(" = ")[0] for name in facts.parameters} == lexical
    assert "bert.embeddings.word_embeddings.weight = cls.predictions.decoder.weight" in facts.parameters
    from transformers import AutoModelForMaskedLM

    base = AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    assert facts.trained_parameter_count == sum(p.numel() for p in lexical_parameters(base).parameters)
    assert facts.trained_parameter_count + facts.frozen_parameter_count == sum(p.numel() for p in base.parameters())
    assert first.run.warmup_steps == 3 and first.run.curriculum_steps == 12  # ceil(0.25 * 12): the curriculum's ramp
    card = (out / "releases" / "v0.1" / "README.md").read_text()
    assert (
        f"| | {'v0.0 (lexical warm-up)' if released else 'lexical warm-up (no release)'} | sub-word token | 0.15 |"
        in card
    )
    assert "| **▶** | **v0.1** | sub-word token | 0.15 | 80/10/10 (mask/random/keep) | 1 | 5 |" in card
    assert "**Lexical warm-up.** Before phase 1, the run's first 4 steps trained only the lexical parameters" in card
    assert "`bert.embeddings.word_embeddings.weight = cls.predictions.decoder.weight`" in card
    assert "| Lexical warm-up peak learning rate | 0.002 |" in card and "| Total curriculum steps | 12 |" in card
    assert "| Learning-rate warm-up | 25% of the curriculum's steps (3 steps) |" in card
    assert "(linear over its 4 steps, a linear ramp over its first step)" in card
    if not released:
        assert "The end of the warm-up is not a release; its batches count in this phase's" in card
        assert not first.is_lexical_warmup and facts.release_version is None
        return
    # Asked for (--lexical_warmup_release v0.0): the warm-up's end is release v0.0, the checkpoint of step 4 itself
    # (the body still the start model's), evaluated on the first phase's masking, and every card says so.
    assert "The end of the warm-up is release v0.0; its batches count" in card
    warmup = ReleaseInfo.load(out / "releases" / "v0.0")
    assert warmup.is_lexical_warmup and not first.is_lexical_warmup and facts.release_version == "0.0"
    assert (warmup.phase_index, warmup.start_step, warmup.end_step, warmup.global_step, warmup.steps) == (
        None,
        0,
        4,
        4,
        4,
    )
    assert (warmup.masking_unit, warmup.masking_rate, warmup.corruption) == ("token", 0.15, True)
    assert warmup.heldout_mlm_loss is not None and 0.1 < warmup.realised_masked_fraction < 0.2
    weights = load_file(out / "releases" / "v0.0" / "model.safetensors")
    assert set(weights) <= set(at_warmup_end)
    for name, tensor in weights.items():
        assert torch.equal(tensor, at_warmup_end[name]), name
    warmup_card = (out / "releases" / "v0.0" / "README.md").read_text()
    assert (
        "checkpoint written at the end of the lexical warm-up, before curriculum phase 1 of 4 (global step 4). "
        "Only its lexical parameters have trained" in warmup_card
    )
    assert "| **▶** | **v0.0** (lexical warm-up) | sub-word token | 0.15 |" in warmup_card
    assert "The warm-up: sub-word token masking at rate 0.15" in warmup_card and "\nsteps 0–4;" in warmup_card
    assert "\nsteps 4–5;" in card  # (a phase starting at step 0 once read "n/a")


def test_run_pretraining_refuses_a_warmup_longer_than_the_run_before_loading_anything(
    monkeypatch, tmp_path, tiny_model_dir, corpus
):
    import bioptimus_hf.pretraining.bioptimus_trainer as bioptimus_trainer
    import bioptimus_hf.vocabulary.embedding_init as embedding_init

    def must_not_load(*_args, **_kwargs):
        raise AssertionError("the model was loaded before the schedule was checked")

    monkeypatch.setattr(bioptimus_trainer, "build_initialized_model", must_not_load)
    monkeypatch.setattr(embedding_init, "build_initialized_model", must_not_load)
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="--lexical_warmup_steps 16 is 16 steps of a run of --max_steps 16"):
        run_script(monkeypatch, run_pretraining, _args(tiny_model_dir, corpus, out, "--lexical_warmup_steps", 16))
    with pytest.raises(SystemExit, match="--ddp_find_unused_parameters true"):
        run_script(
            monkeypatch, run_pretraining, _args(tiny_model_dir, corpus, out, "--ddp_find_unused_parameters", "false")
        )
    with pytest.raises(
        SystemExit,
        match=r"--lexical_warmup_release 0.2 is a version of the curriculum "
        r"\(0.1, 0.2, 0.3, 0.4\): give the warm-up's release its own",
    ):
        run_script(monkeypatch, run_pretraining, _args(tiny_model_dir, corpus, out, "--lexical_warmup_release", "0.2"))
    without_warmup = _args(tiny_model_dir, corpus, out, "--lexical_warmup_release", "0.0")
    at = without_warmup.index("--lexical_warmup_steps")
    del without_warmup[at : at + 2]
    with pytest.raises((SystemExit, ValueError), match="--lexical_warmup_release 0.0: there is no warm-up to release"):
        run_script(monkeypatch, run_pretraining, without_warmup)
    assert not out.exists()


def test_the_record_of_a_run_without_warmup_is_unchanged_and_the_facts_round_trip():
    run = RunFacts(base_model="b", max_steps=10)
    assert "lexical_warmup" not in run.to_dict() and run.curriculum_steps == 10
    facts = LexicalWarmupFacts(
        steps=2, learning_rate=1e-3, parameters=["a = b", "c"], trained_parameter_count=5, frozen_parameter_count=7
    )
    info = ReleaseInfo(version="0.1", run=RunFacts(max_steps=10, lexical_warmup=facts))
    again = ReleaseInfo.from_dict(json.loads(json.dumps(info.to_dict())))
    assert again.run.lexical_warmup == facts and again.run.curriculum_steps == 8


# ------------------------------------------------------------------------------------------ DDP
def test_two_ranks_keep_the_body_frozen_then_train_it_in_step(tiny_tokenizer_dir, tmp_path):
    """Under torch.distributed.run (gloo, 2 processes, each its own batches): through the warm-up the body is bit for
    bit its start on both ranks (DDP's reducer leaves a gradient no rank produced as None); after it the reducer
    all-reduces the body again, so both ranks end with the same weights."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(400)))
    out = tmp_path / "ddp"
    tests = Path(__file__).parent
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(tests, tests.parent))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29551",
        str(tests / "warmup_probe.py"),
        str(tiny_tokenizer_dir),
        str(corpus),
        str(out),
    ]
    result = run_launcher(command, env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [torch.load(out / f"rank{r}.pt") for r in (0, 1)]
    records = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    model = tiny_bert(AutoTokenizer.from_pretrained(tiny_tokenizer_dir))
    lexical = {n for n, p in model.named_parameters() if lexical_parameters(model).contains(p)}
    for rank, record in zip(ranks, records):
        assert record["world"] == 2 and record["find_unused_parameters"] is True
        assert [tuple(h) for h in record["history"]] == [(0, "0.1"), (5, "0.2")]
        assert all(record["with_gradient"][str(s)] == sorted(lexical) for s in (1, 2, 3))
        assert all(len(record["with_gradient"][str(s)]) == len(rank["start"]) for s in (4, 5, 6, 7))
        for name, before in rank["start"].items():
            assert torch.equal(before, rank["at_warmup_end"][name]) != (name in lexical), name
            assert rank["optimizer_state_at_warmup_end"][name] == (name in lexical), name
        assert not torch.equal(
            rank["final"]["bert.encoder.layer.0.output.dense.weight"],
            rank["start"]["bert.encoder.layer.0.output.dense.weight"],
        )
    for name in ranks[0]["final"]:
        assert torch.equal(ranks[0]["final"][name], ranks[1]["final"][name]), name
