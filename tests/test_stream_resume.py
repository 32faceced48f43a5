"""A --streaming run killed at a checkpoint and resumed continues its stream from the loader state the checkpoint holds:
it collates no batch it already trained on, and releases what the unbroken run releases, bit for bit. With a shuffle
buffer the resume says what differs; with --streaming_resume replay it reads the trained batches again."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

import run_pretraining
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.stream_resume import (
    StreamResumeMixin,
    data_state_path,
    dataset_epochs,
    with_stream_resume,
)
from helpers import python_path, run_script
from helpers.pretraining import curriculum_run_flags
from helpers.pubmed import write_prepared_corpus


# Not one torch thread in this process: the killed run's subprocess uses the default threads, and a release written
# there must match the unbroken run's bit for bit (another thread count reduces in another order).
REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_STEPS, KILLED_AT = 12, 4
# run_pretraining killed (SIGKILL: no clean-up) right after it saved checkpoint-<step>.
KILL_AFTER_CHECKPOINT = textwrap.dedent("""
    import os, signal, sys
    from transformers import Trainer
    step = int(sys.argv[1])
    real = Trainer._save_checkpoint
    def _save_checkpoint(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if self.state.global_step == step:
            os.kill(os.getpid(), signal.SIGKILL)
    Trainer._save_checkpoint = _save_checkpoint
    sys.argv = ["run_pretraining.py"] + sys.argv[2:]
    import run_pretraining
    run_pretraining.main()
""")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_prepared_corpus(tmp_path_factory.mktemp("pubmed"), citations=300, files=3)


def flags(model_dir, corpus, out, **settings):
    return curriculum_run_flags(
        model_dir,
        corpus,
        out,
        [3, 3, 3, 3],
        streaming=True,
        save_steps=KILLED_AT,
        save_strategy="steps",
        bulk_dropout=False,
        **settings,
    )


def kill_at_checkpoint(argv, step):
    env = dict(os.environ, PYTHONPATH=python_path(REPO_ROOT, REPO_ROOT / "tests"))
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_CHECKPOINT, str(step), *argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -9, killed.stderr[-3000:]


def releases(out):
    found = {}
    for release in sorted((out / "releases").iterdir()):
        record = json.loads((release / "bioptimus_phase.json").read_text())
        found[release.name] = (load_file(release / "model.safetensors"), record)
    return found


def resume_counting_batches(monkeypatch, argv):
    """Resume in this process; how many batches the collator made (the loader runs in this process)."""
    collated = []
    real = CurriculumDataCollator.__call__

    def counting(self, features):
        collated.append(len(features))
        return real(self, features)

    monkeypatch.setattr(CurriculumDataCollator, "__call__", counting)
    run_script(monkeypatch, run_pretraining, argv)
    monkeypatch.setattr(CurriculumDataCollator, "__call__", real)
    return len(collated)


def assert_same_releases(found, expected, statistics=True):
    assert sorted(found) == sorted(expected) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    for version, (weights, record) in expected.items():
        resumed_weights, resumed_record = found[version]
        for name, tensor in weights.items():
            assert torch.equal(resumed_weights[name], tensor), (version, name)
        if statistics:
            assert resumed_record["realised_masked_fraction"] == record["realised_masked_fraction"], version
        assert resumed_record["schedule_changes"] == record["schedule_changes"] == []


def test_a_killed_streaming_run_resumes_from_its_loader_state_without_replaying(
    monkeypatch, tmp_path, tiny_model_dir, corpus
):
    run_script(monkeypatch, run_pretraining, flags(tiny_model_dir, corpus, tmp_path / "unbroken"))
    expected = releases(tmp_path / "unbroken")

    out = tmp_path / "killed"
    argv = [str(a) for a in flags(tiny_model_dir, corpus, out)]
    kill_at_checkpoint(argv, KILLED_AT)
    state = json.loads(data_state_path(out / f"checkpoint-{KILLED_AT}", 0).read_text())
    assert state["global_step"] == KILLED_AT and dataset_epochs(state["loader"]) == {0}
    replay = tmp_path / "replay"
    shutil.copytree(out, replay)

    collated = resume_counting_batches(monkeypatch, argv)
    # The steps left, and the loader's look-ahead: no batch of the first four steps is made again.
    assert MAX_STEPS - KILLED_AT <= collated <= MAX_STEPS - KILLED_AT + 2
    assert_same_releases(releases(out), expected)

    replay_argv = [str(a) for a in flags(tiny_model_dir, corpus, replay, streaming_resume="replay")]
    replayed = resume_counting_batches(monkeypatch, replay_argv)
    assert replayed >= MAX_STEPS  # transformers' skip: the trained batches collated again
    # The same weights; the masking statistics also count the skipped batches (accelerate moves each to the device,
    # where the collator counts a batch, before skipping it).
    assert_same_releases(releases(replay), expected, statistics=False)
    later = [
        releases(replay)[v][1]["realised_masked_fraction"] != expected[v][1]["realised_masked_fraction"]
        for v in ("v0.2", "v0.3", "v0.4")
    ]
    assert any(later)


def test_a_resume_with_a_shuffle_buffer_records_what_differs(monkeypatch, tmp_path, tiny_model_dir, corpus, caplog):
    out = tmp_path / "buffered"
    argv = [str(a) for a in flags(tiny_model_dir, corpus, out, shuffle_buffer_size=64)]
    kill_at_checkpoint(argv, KILLED_AT)
    with caplog.at_level("WARNING"):
        run_script(monkeypatch, run_pretraining, argv)
    change = (
        f"streaming resume at step {KILLED_AT}: the shuffle buffer (64 examples) was refilled from the stream; the "
        "examples it held are not trained on and the data order differs from an unbroken run's from here"
    )
    assert change in caplog.text
    for version, (_, record) in releases(out).items():
        expected = [] if version == "v0.1" else [{"step": KILLED_AT, "description": change}]
        assert record["schedule_changes"] == expected, version


def test_a_checkpoint_without_the_loader_state_or_from_a_later_pass_is_resumed_by_the_skip(tmp_path, caplog):
    trainer = SimpleNamespace(args=SimpleNamespace(process_index=0), state=SimpleNamespace(global_step=4))
    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    with caplog.at_level("WARNING"):
        assert StreamResumeMixin._data_state(trainer, str(checkpoint), 0) is None
    assert "has no data_state_0.json (saved without the loader's state)" in caplog.text
    loader = {"dataset_state": {"examples_iterable": {"shard_idx": 1}, "epoch": 1}}
    data_state_path(checkpoint, 0).write_text(json.dumps({"format": 1, "global_step": 4, "loader": loader}))
    assert StreamResumeMixin._data_state(trainer, str(checkpoint), 0) is None
    assert "in pass [1] over the stream" in caplog.text
    loader["dataset_state"]["epoch"] = 0
    data_state_path(checkpoint, 0).write_text(json.dumps({"format": 1, "global_step": 4, "loader": loader}))
    assert StreamResumeMixin._data_state(trainer, str(checkpoint), 0) == loader
    assert dataset_epochs({"_worker_snapshots": {"worker_0": {"dataset_state": loader}}}) == {0}


def test_the_mixin_goes_first_once(tmp_path):
    from transformers import Trainer

    from bioptimus_hf.pretraining.lexical_warmup import LexicalWarmupTrainer

    for base in (Trainer, LexicalWarmupTrainer):
        resumable = with_stream_resume(base)
        assert resumable.__mro__[1:3] == (StreamResumeMixin, base) and with_stream_resume(resumable) is resumable
    with pytest.raises(ValueError, match="--streaming_resume must be one of state, replay, got 'later'"):
        with_stream_resume(Trainer)(model=torch.nn.Linear(1, 1), streaming_resume="later")


@pytest.mark.parametrize("workers", [0, 2])
def test_the_loader_state_continues_the_stream_exactly(tmp_path, corpus, tiny_tokenizer, workers):
    """What the checkpoint holds, at the data level: a loader resumed from a saved state (through JSON) yields the
    batches the first loader yields after it, with or without DataLoader workers."""
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration
    from torch.utils.data import DataLoader
    from transformers import TrainingArguments

    from bioptimus_hf.pretraining.bioptimus_config import PretrainingDataArguments
    from bioptimus_hf.pretraining.data import load_pretraining_datasets

    def loader():
        data = PretrainingDataArguments(
            train_file=[str(corpus)], max_seq_length=32, validation_split_percentage=0, streaming=True
        )
        training = TrainingArguments(str(tmp_path / "o"), report_to="none", seed=3)
        stream = load_pretraining_datasets(data, tiny_tokenizer, training).train
        accelerator = Accelerator(dataloader_config=DataLoaderConfiguration(use_stateful_dataloader=True))
        batches = DataLoader(
            stream, batch_size=4, collate_fn=CurriculumDataCollator(tiny_tokenizer, seed=3), num_workers=workers
        )
        return accelerator.prepare(batches)

    first = loader()
    batches = iter(first)
    for _ in range(7):
        next(batches)
    saved = json.loads(json.dumps(first.state_dict()))
    expected = [next(batches)["input_ids"] for _ in range(5)]
    second = loader()
    second.load_state_dict(saved)
    resumed = iter(second)
    for want in expected:
        assert torch.equal(next(resumed)["input_ids"], want)
