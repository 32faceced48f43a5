"""run_pretraining.py under faults and odd input: nothing lost, nothing silently wrong (issue 11)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import run_pretraining
from bioptimus_hf.pretraining.run_lifecycle import OutputDirLock, last_complete_checkpoint
from helpers import corpus_lines, python_path, run_script


REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def corpus(make_corpus):
    return make_corpus(400)


def args(model_dir, corpus, out, *extra, do_train=True):
    base = [
        "--model_name_or_path",
        model_dir,
        "--train_file",
        corpus,
        "--output_dir",
        out,
        "--max_steps",
        8,
        "--per_device_train_batch_size",
        4,
        "--max_seq_length",
        32,
        "--report_to",
        "none",
        "--max_eval_samples",
        8,
        "--logging_steps",
        4,
        "--disable_tqdm",
        "true",
        "--save_steps",
        4,
        "--phase_steps",
        2,
        2,
        2,
        2,
    ]
    return base + (["--do_train"] if do_train else []) + list(extra)


def _snapshot(releases: Path) -> dict:
    return {p.relative_to(releases).as_posix(): p.read_bytes() for p in releases.rglob("*") if p.is_file()}


def test_a_run_without_do_train_resumes_like_one_with_it(monkeypatch, tmp_path, tiny_model_dir, corpus, caplog):
    """Training always runs, so the output-dir guard and checkpoint detection must not depend on --do_train. At
    the default verbosity a run names each release, and at its end what it left and how to load it; a finished
    run says in one line that there is nothing to do and how to start afresh; neither leaves its lock file."""
    out = tmp_path / "out"
    with caplog.at_level("WARNING", logger="bioptimus_hf"):
        run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, out, do_train=False))
    before = _snapshot(out / "releases")
    assert sorted({k.split("/")[0] for k in before}) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    for name in ("v0.1", "v0.2", "v0.3", "v0.4"):
        assert sum(f"wrote release {out / 'releases' / name} (held-out MLM loss" in m for m in said) == 1, said
    assert (
        f"run finished: {out} holds releases v0.1, v0.2, v0.3, v0.4 and checkpoints checkpoint-2, checkpoint-4, "
        f"checkpoint-6, checkpoint-8; load one with AutoModelForMaskedLM.from_pretrained('{out / 'releases' / 'v0.4'}')"
        in said
    )
    assert not (out / ".bioptimus-run.lock").exists()
    caplog.clear()
    with caplog.at_level("WARNING", logger="bioptimus_hf"):
        run_script(
            monkeypatch, run_pretraining, args(tiny_model_dir, corpus, out, "--tokenizer_name", "x", do_train=False)
        )
    assert [r.getMessage() for r in caplog.records] == [
        f"{out} holds a finished run (checkpoint-8, step 8): nothing to do, the other flags are not used; to train "
        "again, give a new --output_dir (or remove it)"
    ]
    assert _snapshot(out / "releases") == before
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 8
    assert not (out / ".bioptimus-run.lock").exists()


@pytest.mark.parametrize("fault", [KeyboardInterrupt, RuntimeError])
def test_a_run_that_fails_or_is_interrupted_leaves_no_lock_file(monkeypatch, tmp_path, tiny_model_dir, corpus, fault):
    from bioptimus_hf.pretraining.bioptimus_trainer import BioptimusTrainer

    def train(self, **kwargs):
        assert (tmp_path / "out" / ".bioptimus-run.lock").is_file()  # held while the run trains
        raise fault("injected")

    monkeypatch.setattr(BioptimusTrainer, "train", train)
    with pytest.raises((fault, SystemExit)):
        run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, tmp_path / "out"))
    assert not (tmp_path / "out" / ".bioptimus-run.lock").exists()


def test_a_second_run_on_the_same_output_dir_is_refused(monkeypatch, tmp_path, tiny_model_dir, corpus):
    out = tmp_path / "busy"
    with OutputDirLock(out):
        with pytest.raises(SystemExit, match=rf"in use by process {os.getpid()} on .*another --output_dir"):
            run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, out))
        assert (out / ".bioptimus-run.lock").is_file()  # the refused run leaves the holder's lock alone
    assert not (out / "releases").exists() and not (out / ".bioptimus-run.lock").exists()
    run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, out))  # released: the run goes ahead
    assert (out / "releases" / "v0.4").is_dir()


def test_resume_under_another_schedule_is_refused_unless_allowed(monkeypatch, tmp_path, tiny_model_dir, corpus):
    out = tmp_path / "out"
    first = args(tiny_model_dir, corpus, out, "--max_steps", 6, "--phase_steps", 0.25, 0.25, 0.25, 0.25)
    run_script(
        monkeypatch, run_pretraining, first
    )  # steps 2/2/1/1 (largest remainder); checkpoints at phase ends 2, 4, 5, 6
    (out / "checkpoint-6").rename(out / "checkpoint-6.moved")  # as if the run had stopped after step 5
    v01 = _snapshot(out / "releases" / "v0.1")
    changed = args(tiny_model_dir, corpus, out, "--max_steps", 12, "--phase_steps", 0.25, 0.25, 0.25, 0.25)
    with pytest.raises(
        SystemExit,
        match=r"checkpoint-5 was trained under another curriculum schedule \(steps per "
        r"phase \[2, 2, 1, 1\] -> \[3, 3, 3, 3\]; max_steps 6 -> 12\).* pass --allow_schedule_change .*, or "
        r"give a new --output_dir to start afresh",
    ):
        run_script(monkeypatch, run_pretraining, changed)
    assert _snapshot(out / "releases" / "v0.1") == v01  # nothing rewritten
    run_script(monkeypatch, run_pretraining, changed + ["--allow_schedule_change", "true"])
    info = json.loads((out / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert info["schedule_changes"] == [
        {"step": 5, "description": "steps per phase [2, 2, 1, 1] -> [3, 3, 3, 3]; max_steps 6 -> 12"}
    ]
    assert (
        "The schedule was changed when the run was resumed: at step 5"
        in (out / "releases" / "v0.4" / "README.md").read_text()
    )


def test_phases_past_max_steps_are_refused(monkeypatch, tmp_path, tiny_model_dir, corpus):
    with pytest.raises(SystemExit, match=r"add up to 12 steps but the run has max_steps=8.*never run"):
        run_script(
            monkeypatch, run_pretraining, args(tiny_model_dir, corpus, tmp_path / "o", "--phase_steps", 3, 3, 3, 3)
        )


# Runs run_pretraining in a child that kills itself (SIGKILL) while the Trainer saves checkpoint-8's
# trainer_state.json, the file a checkpoint is written last: checkpoint-8 is left half written.
KILL_DURING_SAVE = textwrap.dedent("""
    import os, signal, sys
    from transformers.trainer_callback import TrainerState
    real = TrainerState.save_to_json
    def save_to_json(self, path):
        if "checkpoint-8" in str(path):
            open(path, "w").write('{"global_st')
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, path)
    TrainerState.save_to_json = save_to_json
    sys.argv = ["run_pretraining.py"] + sys.argv[1:]
    import run_pretraining
    run_pretraining.main()
""")


def test_a_half_written_checkpoint_is_skipped_on_resume(monkeypatch, tmp_path, tiny_model_dir, corpus, caplog):
    out = tmp_path / "out"
    argv = [str(a) for a in args(tiny_model_dir, corpus, out, "--max_steps", 12, "--phase_steps", 3, 3, 3, 3)]
    env = dict(os.environ, PYTHONPATH=python_path(REPO_ROOT, REPO_ROOT / "tests"))
    killed = subprocess.run(
        [sys.executable, "-c", KILL_DURING_SAVE, *argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert (out / "checkpoint-8").is_dir() and (out / "checkpoint-4" / "trainer_state.json").is_file()
    with caplog.at_level("WARNING"):
        run_script(monkeypatch, run_pretraining, argv)
    assert "checkpoint-8 is incomplete" in caplog.text and "set aside as checkpoint-8.incomplete" in caplog.text
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 12
    assert [p.name for p in sorted((out / "releases").iterdir())] == ["v0.1", "v0.2", "v0.3", "v0.4"]
    assert last_complete_checkpoint(out).name == "checkpoint-12"


# Runs run_pretraining in a child that kills itself (SIGKILL) right after checkpoint-4 is complete, mid-phase.
KILL_AFTER_CHECKPOINT_4 = textwrap.dedent("""
    import os, signal, sys
    from transformers import Trainer
    real = Trainer._save_checkpoint
    def _save_checkpoint(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if self.state.global_step == 4:
            os.kill(os.getpid(), signal.SIGKILL)
    Trainer._save_checkpoint = _save_checkpoint
    sys.argv = ["run_pretraining.py"] + sys.argv[1:]
    import run_pretraining
    run_pretraining.main()
""")


def _release_weights_and_masking(out: Path) -> dict:
    from safetensors.torch import load_file

    releases = {}
    for release in sorted((out / "releases").iterdir()):
        record = json.loads((release / "bioptimus_phase.json").read_text())
        releases[release.name] = (
            load_file(release / "model.safetensors"),
            record["realised_masked_fraction"],
            record["run"],
        )
    return releases


def test_a_killed_run_resumed_from_its_checkpoint_releases_what_the_unbroken_run_releases(
    monkeypatch, tmp_path, tiny_model_dir, corpus
):
    """Killed mid-phase and resumed, a run must release the unbroken run's models bit for bit: the masks (keyed by
    batch, collator module docstring), dropout, data order and optimizer all come back with the checkpoint."""
    extra = ["--max_steps", 12, "--phase_steps", 3, 3, 3, 3, "--max_eval_samples", 0]
    run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, tmp_path / "unbroken", *extra))
    out = tmp_path / "killed"
    argv = [str(a) for a in args(tiny_model_dir, corpus, out, *extra)]
    env = dict(os.environ, PYTHONPATH=python_path(REPO_ROOT, REPO_ROOT / "tests"))
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_CHECKPOINT_4, *argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert last_complete_checkpoint(out).name == "checkpoint-4"
    assert [p.name for p in (out / "releases").iterdir()] == ["v0.1"]  # phase 0.2 was under way
    run_script(monkeypatch, run_pretraining, argv)
    expected, resumed = _release_weights_and_masking(tmp_path / "unbroken"), _release_weights_and_masking(out)
    assert sorted(resumed) == sorted(expected) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    for version, (weights, masking, facts) in expected.items():
        resumed_weights, resumed_masking, _ = resumed[version]
        assert weights.keys() == resumed_weights.keys()
        for name, tensor in weights.items():
            assert torch.equal(resumed_weights[name], tensor), (version, name)
        assert resumed_masking == masking, version  # the statistics of the batches trained on, none twice
    assert {facts["masking_stream"] for release in (expected, resumed) for *_, facts in release.values()} == {"keyed"}


def test_the_releases_do_not_depend_on_the_dataloader_workers(monkeypatch, tmp_path, tiny_model_dir, corpus):
    """Keyed masks are drawn wherever a batch is collated; dropout and data order come from the main process."""
    extra = ["--max_steps", 6, "--phase_steps", 2, 2, 1, 1, "--max_eval_samples", 0]
    run_script(
        monkeypatch,
        run_pretraining,
        args(tiny_model_dir, corpus, tmp_path / "inline", *extra, "--dataloader_num_workers", 0),
    )
    run_script(
        monkeypatch,
        run_pretraining,
        args(tiny_model_dir, corpus, tmp_path / "workers", *extra, "--dataloader_num_workers", 2),
    )
    inline, workers = (
        _release_weights_and_masking(tmp_path / "inline"),
        _release_weights_and_masking(tmp_path / "workers"),
    )
    assert sorted(inline) == sorted(workers) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    for version, (weights, masking, _) in inline.items():
        assert workers[version][1] == masking, version
        for name, tensor in weights.items():
            assert torch.equal(workers[version][0][name], tensor), (version, name)


def test_a_checkpoint_resumed_under_another_masking_stream_says_so(
    monkeypatch, tmp_path, tiny_model_dir, corpus, caplog
):
    import shutil

    first = tmp_path / "sequential"
    run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, first, "--masking_stream", "sequential"))
    out = tmp_path / "resumed"
    shutil.copytree(first / "checkpoint-4", out / "checkpoint-4")
    with caplog.at_level("WARNING"):
        run_script(monkeypatch, run_pretraining, args(tiny_model_dir, corpus, out))  # the default: keyed
    assert "at step 4: masking stream sequential -> keyed (--masking_stream sequential keeps" in caplog.text
    for version in ("v0.3", "v0.4"):
        record = json.loads((out / "releases" / version / "bioptimus_phase.json").read_text())
        assert record["run"]["masking_stream"] == "keyed"
        assert [c["step"] for c in record["schedule_changes"]] == [4], record["schedule_changes"]
        assert "masking stream sequential -> keyed" in record["schedule_changes"][0]["description"]
    first_record = json.loads((first / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert first_record["run"]["masking_stream"] == "sequential" and first_record["schedule_changes"] == []


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_json_lines_and_csv_corpora_train(monkeypatch, tmp_path, tiny_model_dir, kind):
    lines = corpus_lines(300)
    path = tmp_path / f"corpus.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps({"id": i, "abstract": t}) + "\n" for i, t in enumerate(lines)))
    else:
        import csv

        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "abstract"])
            writer.writerows(enumerate(lines))
    out = tmp_path / "out"
    run_script(monkeypatch, run_pretraining, args(tiny_model_dir, path, out, "--text_column_name", "abstract"))
    assert (out / "releases" / "v0.4" / "model.safetensors").is_file()
    with pytest.raises(
        SystemExit, match=rf"--text_column_name 'text' not in the columns of .*corpus.{kind}: \['id', 'abstract'\]"
    ):
        run_script(monkeypatch, run_pretraining, args(tiny_model_dir, path, tmp_path / "o2"))


def test_mixed_corpus_kinds_are_refused(monkeypatch, tmp_path, tiny_model_dir, corpus):
    other = tmp_path / "more.jsonl"
    other.write_text(json.dumps({"text": "a line"}) + "\n")
    argv = args(tiny_model_dir, corpus, tmp_path / "o")
    argv[argv.index("--train_file") + 1 : argv.index("--train_file") + 2] = [corpus, other]
    with pytest.raises(SystemExit, match=r"mixes corpus kinds \(text: .*corpus.txt; json: .*more.jsonl\)"):
        run_script(monkeypatch, run_pretraining, argv)


def test_binary_and_one_line_corpora(monkeypatch, tmp_path, tiny_model_dir, caplog):
    binary = tmp_path / "weights.txt"
    binary.write_bytes(bytes(range(256)) * 50)
    with pytest.raises(SystemExit, match=r"weights.txt: \d+ of \d+ lines read .* not UTF-8"):
        run_script(monkeypatch, run_pretraining, args(tiny_model_dir, binary, tmp_path / "o1"))
    one_line = tmp_path / "one.txt"
    one_line.write_text(" ".join(corpus_lines(60)) + "\n")  # one long line: enough tokens for a few blocks
    with caplog.at_level("WARNING"):
        run_script(
            monkeypatch,
            run_pretraining,
            args(tiny_model_dir, one_line, tmp_path / "o2", "--max_steps", 4, "--phase_steps", 1, 1, 1, 1),
        )
    assert "too few to hold out" in caplog.text
    info = json.loads((tmp_path / "o2" / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert info["heldout_mlm_loss"] is None


def test_a_phase_version_cannot_escape_output_dir(monkeypatch, tmp_path, tiny_model_dir, corpus):
    curriculum = tmp_path / "evil.yaml"
    curriculum.write_text("- {version: '../../escaped', masking_unit: token, masking_rate: 0.15}\n")
    with pytest.raises(SystemExit, match=r"phase 1: release version '../../escaped' is not allowed"):
        run_script(
            monkeypatch,
            run_pretraining,
            args(tiny_model_dir, corpus, tmp_path / "o", "--curriculum", curriculum, "--phase_steps", 8),
        )
    assert not (tmp_path / "escaped").exists()
