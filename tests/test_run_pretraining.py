"""run_pretraining.py end to end on a tiny random BERT, and its refusal of bad input before training."""

import json
import logging
import shutil
import sys

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

import run_pretraining
from bioptimus_hf.utils.bulk_dropout import bulk_dropout_pays_off
from helpers import corpus_lines, python_path, run_launcher, run_script
from helpers.pretraining import base_args


@pytest.fixture
def corpus(make_corpus):
    return make_corpus(600, bad_byte=True)


def test_end_to_end_releases_four_versions(monkeypatch, tmp_path, tiny_model_dir, corpus):
    config = tmp_path / "run.yaml"
    config.write_text("phase_steps: [0.1, 0.2, 0.3, 0.4]\nlearning_rate: 5.0e-4\nwarmup_steps: 0.06\n")
    out = tmp_path / "out"
    # 16 rows a step: a whole-word phase lands within half a word of its budget per row (a token of ~30 is 3 %),
    # so the one- and two-step phases need that many rows for their fractions to sit well inside the bounds below
    run_script(
        monkeypatch,
        run_pretraining,
        [config, *base_args(tiny_model_dir, corpus, out), "--per_device_train_batch_size", 16],
    )
    releases = sorted(p.name for p in (out / "releases").iterdir())
    assert releases == ["v0.1", "v0.2", "v0.3", "v0.4"]
    ends = []
    for name, unit, rate, corruption in [
        ("v0.1", "token", 0.15, True),
        ("v0.2", "word", 0.15, True),
        ("v0.3", "word", 0.2, True),
        ("v0.4", "word", 0.2, False),
    ]:
        release = out / "releases" / name
        assert (release / "model.safetensors").is_file() and (release / "README.md").is_file()
        info = json.loads((release / "bioptimus_phase.json").read_text())
        assert (info["masking_unit"], info["masking_rate"], info["corruption"]) == (unit, rate, corruption)
        assert abs(info["realised_masked_fraction"] - rate) < 0.03
        assert info["heldout_mlm_loss"] > 0 and info["run"]["learning_rate"] == 5e-4
        # bulk: a CPU default, except on Intel CPUs (tests/test_bulk_dropout.py fakes both vendors)
        assert info["run"]["dropout_masks"] == (
            "bulk" if not torch.cuda.is_available() and bulk_dropout_pays_off() else "torch"
        )
        ends.append(info["end_step"])
        model = AutoModelForMaskedLM.from_pretrained(release)
        assert type(model).__name__ == "BertForMaskedLM"
    assert ends == [1, 3, 7, 12]  # 1.2/2.4/3.6/4.8 steps -> 1/2/4/5 by largest remainder
    # Releases differ: the model trained between them.
    first = AutoModelForMaskedLM.from_pretrained(out / "releases" / "v0.1").bert.embeddings.word_embeddings.weight
    last = AutoModelForMaskedLM.from_pretrained(out / "releases" / "v0.4").bert.embeddings.word_embeddings.weight
    assert not torch.equal(first, last)
    metrics = json.loads((out / "train_results.json").read_text())
    assert {f"realised_masked_fraction_v0.{k}" for k in (1, 2, 3, 4)} <= metrics.keys()
    # Curriculum metrics reach the Trainer's log history (and so every reporter).
    train_logs = [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    assert [e["curriculum_phase"] for e in train_logs] == [2, 3, 3, 4, 4, 4]  # logs at steps 2, 4, ..., 12
    assert all(abs(e["realised_masked_fraction"] - e["masking_rate"]) < 0.05 for e in train_logs)


def test_streaming_corpus(monkeypatch, tmp_path, tiny_model_dir, corpus):
    out = tmp_path / "out"
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(tiny_model_dir, corpus, out) + ["--streaming", "true", "--max_steps", 8, "--bulk_dropout", "false"],
    )
    info = json.loads((out / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert info["end_step"] == 8 and info["heldout_mlm_loss"] > 0
    assert info["run"]["dropout_masks"] == "torch"


def test_line_by_line_chunks_long_lines(monkeypatch, tmp_path, tiny_model_dir, corpus, caplog):
    long_corpus = tmp_path / "long.txt"
    long_corpus.write_bytes(corpus.read_bytes() + (" ".join(corpus_lines(30)) + "\n").encode())
    out = tmp_path / "out"
    args = base_args(tiny_model_dir, long_corpus, out) + [
        "--line_by_line",
        "true",
        "--validation_split_percentage",
        0,
        "--phase_steps",
        6,
        6,
        0,
        0,
    ]
    with pytest.raises(SystemExit, match="each phase needs a positive number of steps"):
        run_script(monkeypatch, run_pretraining, args)
    args[-4:] = [3, 3, 3, 3]
    with caplog.at_level("WARNING"):
        run_script(monkeypatch, run_pretraining, args)
    assert "were chunked into" in caplog.text
    assert (out / "releases" / "v0.4").is_dir()


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda a, tmp: a.__setitem__(a.index("--train_file") + 1, tmp / "missing.txt"), "does not exist"),
        (lambda a, tmp: a.__setitem__(a.index("--train_file") + 1, _write(tmp / "empty.txt", "\n \n")), "is empty"),
        (lambda a, tmp: a.extend(["--phase_steps", 0.5, 0.5]), "2 values for 4 curriculum phases"),
        (lambda a, tmp: a.extend(["--curriculum", _curriculum(tmp, "masking_rate: 1.2")]), "outside \\(0, 1\\)"),
        (lambda a, tmp: a.extend(["--curriculum", _curriculum(tmp, "masking_unit: span")]), "unknown masking unit"),
        (lambda a, tmp: a.extend(["--init_strategy", "magic"]), "--init_strategy 'magic'"),
    ],
    ids=["missing-corpus", "empty-corpus", "phase-count", "rate", "unit", "strategy"],
)
def test_bad_input_fails_before_training(monkeypatch, tmp_path, tiny_model_dir, corpus, change, message):
    out = tmp_path / "out"
    args = base_args(tiny_model_dir, corpus, out)
    change(args, tmp_path)
    with pytest.raises(SystemExit, match=message):
        run_script(monkeypatch, run_pretraining, args)
    assert not (out / "releases").exists()


def _write(path, text):
    path.write_text(text)
    return path


def _curriculum(tmp, bad_line):
    path = tmp / "curriculum.yaml"
    path.write_text(f"- version: '0.1'\n  {bad_line}\n")
    return path


def test_tokenizer_without_mask_token_and_existing_output_are_refused(monkeypatch, tmp_path, tiny_model_dir, corpus):
    from transformers import AutoTokenizer

    no_mask = tmp_path / "nomask"
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.mask_token = None
    tokenizer.save_pretrained(no_mask)
    with pytest.raises(SystemExit, match="has no mask token"):
        run_script(
            monkeypatch,
            run_pretraining,
            base_args(tiny_model_dir, corpus, tmp_path / "o1") + ["--tokenizer_name", no_mask],
        )
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "precious.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="is not empty .* but holds no complete checkpoint"):
        run_script(monkeypatch, run_pretraining, base_args(tiny_model_dir, corpus, occupied))
    assert (occupied / "precious.txt").read_text() == "keep me"


def test_cards_name_the_base_model_without_local_paths(monkeypatch, tmp_path, tiny_model_dir, corpus):
    """A local base model appears as its folder name (or the Hub id given), never as an absolute path."""
    out = tmp_path / "out"
    run_script(monkeypatch, run_pretraining, base_args(tiny_model_dir, corpus, out) + ["--max_steps", 10])
    card = (out / "releases" / "v0.4" / "README.md").read_text()
    phase = json.loads((out / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert str(tmp_path) not in card and str(tmp_path) not in json.dumps(phase)
    assert f"Base model: started from a local checkpoint, `{tiny_model_dir.name}`;" in card
    out2 = tmp_path / "out2"
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(tiny_model_dir, corpus, out2) + ["--max_steps", 10, "--base_model_hub_id", "acme/tiny-bert"],
    )
    card = (out2 / "releases" / "v0.4" / "README.md").read_text()
    assert "Base model: `acme/tiny-bert`" in card and "base_model: acme/tiny-bert" in card


def test_accelerate_launch_two_cpu_processes(tmp_path, tiny_model_dir, corpus):
    """`accelerate launch --cpu --num_processes 2` (gloo) runs the curriculum end to end: both ranks switch
    phases at the same steps, the main process alone writes each release and every rank waits for it."""
    import os
    import re
    from pathlib import Path

    root = Path(run_pretraining.__file__).parent
    out = tmp_path / "out"
    config = tmp_path / "run.yaml"
    config.write_text(
        "phase_steps: [0.1, 0.2, 0.3, 0.4]\nlearning_rate: 5.0e-4\nwarmup_steps: 0.06\n"
        "ddp_backend: gloo\nuse_cpu: true\nlog_level: info\nlog_level_replica: info\n"
    )
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(root / "configs" / "accelerate" / "cpu_two_processes.yaml"),
        "--main_process_port",
        "29531",
        str(root / "run_pretraining.py"),
        str(config),
        *map(str, base_args(tiny_model_dir, corpus, out)),
    ]
    command[command.index("--max_steps") + 1] = "8"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(root))
    result = run_launcher(command, env, timeout=300, cwd=tmp_path)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert "terminate called" not in log  # every rank closed its process group before exiting
    ends = []
    for name in ("v0.1", "v0.2", "v0.3", "v0.4"):
        info = json.loads((out / "releases" / name / "bioptimus_phase.json").read_text())
        assert info["run"]["world_size"] == 2 and info["run"]["effective_train_batch_size"] == 8
        ends.append(info["end_step"])
        # Written once (main process), seen by both ranks after the barrier.
        assert len(re.findall(rf"wrote release \S+{re.escape(name)} ", log)) == 1
        for rank in (0, 1):
            assert len(re.findall(rf"rank {rank} of 2 sees release \S+{re.escape(name)}\n", log)) == 1, name
    assert ends == [1, 3, 5, 8]  # 0.8/1.6/2.4/3.2 steps -> 1/2/2/3 by largest remainder
    assert "cannot see release" not in log
    # Both ranks activate every phase at the same global step.
    switches = re.findall(r"phase v(0\.\d) active from global step (\d+)", log)
    assert sorted(set(switches)) == [("0.1", "0"), ("0.2", "1"), ("0.3", "3"), ("0.4", "5")]
    assert all(switches.count(s) == 2 for s in set(switches))
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1", "v0.2", "v0.3", "v0.4"]


def test_bf16_on_cpu_with_masked_only_head_and_curriculum(monkeypatch, tmp_path, tiny_model_dir, corpus):
    """--bf16 true (TrainingArguments' CPU autocast): finite losses, float32 releases that load and differ."""
    from transformers.utils import is_torch_bf16_available_on_device

    if not is_torch_bf16_available_on_device("cpu"):
        pytest.skip("this torch build cannot run bf16 on the CPU")
    out = tmp_path / "out"
    # transformers refuses --bf16 without a GPU unless --use_cpu is given explicitly.
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(tiny_model_dir, corpus, out)
        + ["--bf16", "true", "--use_cpu", "true", "--max_steps", 8, "--logging_steps", 1],
    )
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    losses = [e["loss"] for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    assert len(losses) == 8 and all(torch.isfinite(torch.tensor(losses)))
    info = json.loads((out / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert torch.isfinite(torch.tensor(info["heldout_mlm_loss"])) and info["heldout_mlm_loss"] > 0
    released = AutoModelForMaskedLM.from_pretrained(out / "releases" / "v0.4")
    base = AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    weights = released.bert.embeddings.word_embeddings.weight
    assert weights.dtype == torch.float32 and torch.isfinite(weights).all()  # master weights stay float32
    assert not torch.equal(weights, base.bert.embeddings.word_embeddings.weight)


def test_a_run_continued_from_an_initialised_checkpoint_states_its_real_initialisation(
    monkeypatch, tmp_path, tiny_model_dir, corpus
):
    """bioptimus init-embeddings, then --init_strategy continued from its output (what a study does): the records
    and cards state the initialisation and the base model of the start checkpoint, not "continued" from it."""
    from bioptimus_hf.commands import run as bioptimus

    start = tmp_path / "init_averaged"
    bioptimus(
        "init-embeddings",
        [
            "--model_name_or_path",
            str(tiny_model_dir),
            "--tokenizer_name",
            str(tiny_model_dir),
            "--init_strategy",
            "averaged",
            "--output_dir",
            str(start),
            "--init_device",
            "cpu",
        ],
    )
    out = tmp_path / "out"
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(start, corpus, out) + ["--init_strategy", "continued", "--max_steps", 10],
    )
    phase = json.loads((out / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert phase["run"]["init_strategy"] == "averaged"
    assert phase["run"]["base_model"] == tiny_model_dir.name
    card = (out / "releases" / "v0.4" / "README.md").read_text()
    assert f"Base model: started from a local checkpoint, `{tiny_model_dir.name}`;" in card and start.name not in card
    assert phase["run"]["tokenizer"] == tiny_model_dir.name  # the vocabulary the start checkpoint was given


@pytest.mark.compile
def test_torch_compile_releases_plain_models_equal_to_the_final_weights(monkeypatch, tmp_path, tiny_model_dir, corpus):
    """--torch_compile true (the GPU configs set it): the masked-only head and the curriculum compile, and every
    release is a plain BertForMaskedLM (no compile wrapper's prefixes), the last one equal to the saved model."""
    from safetensors.torch import load_file

    out = tmp_path / "out"
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(tiny_model_dir, corpus, out)
        + ["--torch_compile", "true", "--use_cpu", "true", "--max_steps", 10, "--logging_nan_inf_filter", "false"],
    )
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    released = load_file(out / "releases" / "v0.4" / "model.safetensors")
    final = load_file(out / "model.safetensors")
    assert not any("_orig_mod" in key for key in released)
    assert released.keys() == final.keys() and all(torch.equal(released[k], final[k]) for k in final)
    model = AutoModelForMaskedLM.from_pretrained(out / "releases" / "v0.4")
    base = AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    assert not torch.equal(
        model.bert.encoder.layer[0].output.dense.weight, base.bert.encoder.layer[0].output.dense.weight
    )


class _Recorder(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_a_fine_tunes_new_head_is_one_line_once_and_any_other_load_report_is_shown(
    monkeypatch, tmp_path, tiny_model_dir, caplog
):
    """Loading a masked LM for a fine-tune (every seed does): transformers' load report of the new task head becomes
    one line, said once; a load that misses weights of the base model keeps its report."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForTokenClassification

    from bioptimus_hf.utils import masked_lm_loading

    monkeypatch.setattr(masked_lm_loading, "_NEW_HEADS_SAID", set())
    recorder = _Recorder()
    logging.getLogger("transformers").addHandler(recorder)
    try:
        with caplog.at_level(logging.WARNING, logger="bioptimus_hf"):
            for _ in range(3):
                model = masked_lm_loading.load_with_new_head(
                    AutoModelForTokenClassification, str(tiny_model_dir), num_labels=3
                )
        assert model.classifier.out_features == 3
        assert not any("LOAD REPORT" in m for m in recorder.messages), recorder.messages
        assert [r.getMessage() for r in caplog.records if "task head" in r.getMessage()] == [
            f"{tiny_model_dir} as BertForTokenClassification: the task head starts new (classifier.*); not used: cls.*"
        ]
        damaged = tmp_path / "damaged"
        shutil.copytree(tiny_model_dir, damaged)
        weights = load_file(damaged / "model.safetensors")
        del weights["bert.encoder.layer.0.output.dense.weight"]
        save_file(weights, damaged / "model.safetensors", metadata={"format": "pt"})
        masked_lm_loading.load_with_new_head(AutoModelForTokenClassification, str(damaged), num_labels=3)
        assert any("LOAD REPORT" in m and "layer.0.output.dense.weight" in m for m in recorder.messages)
    finally:
        logging.getLogger("transformers").removeHandler(recorder)


def test_a_headless_base_is_one_line_and_a_resume_names_its_checkpoint_and_step(
    monkeypatch, tmp_path, tiny_model_dir, corpus, caplog
):
    """A base without an MLM head (a sentence encoder) gives one line saying the head starts new, in place of
    transformers' load report and its "checkpoint seem corrupted" for the head's tied bias; a resumed run says from
    which checkpoint and step it resumes, once, without the Trainer's "missing keys" for the tied decoder."""
    headless = tmp_path / "headless"
    AutoModelForMaskedLM.from_pretrained(tiny_model_dir).bert.save_pretrained(headless)  # a BertModel: no cls.*
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(headless)
    recorder = _Recorder()
    logging.getLogger("transformers").addHandler(recorder)
    try:
        AutoModelForMaskedLM.from_pretrained(headless)  # what transformers says on its own: both warnings
        assert any("seem corrupted" in m for m in recorder.messages)
        assert any("LOAD REPORT" in m and "cls.predictions" in m for m in recorder.messages)
        recorder.messages.clear()

        out = tmp_path / "out"
        flags = [*base_args(headless, corpus, out), "--max_steps", 8, "--save_steps", 4]
        with caplog.at_level(logging.WARNING):
            run_script(monkeypatch, run_pretraining, flags)
        assert not any("seem corrupted" in m or "LOAD REPORT" in m for m in recorder.messages), recorder.messages
        head_lines = [r.getMessage() for r in caplog.records if "MLM head" in r.getMessage()]
        assert head_lines == [f"{headless} has no MLM head: it starts new (cls.predictions.*, 6 tensors)"]
        assert not any("resuming" in r.getMessage() for r in caplog.records)

        for checkpoint in out.glob("checkpoint-*"):
            if int(checkpoint.name.split("-")[1]) > 4:
                shutil.rmtree(checkpoint)  # as if the run had stopped after step 4
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            run_script(monkeypatch, run_pretraining, flags)
        assert recorder.messages == [], recorder.messages  # no load report, no "missing keys" of the tied decoder
    finally:
        logging.getLogger("transformers").removeHandler(recorder)
    resumed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("resuming")]
    assert resumed == [f"resuming from {out / 'checkpoint-4'} at step 4 of 8"]
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 8
