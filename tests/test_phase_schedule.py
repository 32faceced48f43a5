"""PhaseScheduleCallback: the batch of the first step of a phase is masked for that phase, whatever
the DataLoader set-up (workers, persistent workers, gradient accumulation), after resuming from a
checkpoint, and on every rank of a distributed run."""

import json
import os
import sys
from pathlib import Path

import pytest

from helpers import corpus_lines, python_path, run_launcher
from phase_probe import probe_dataset, run_probe


def expected_phase(step, ends):
    return 0 if step < ends[0] else 1


@pytest.fixture(scope="module")
def probe_data(tiny_tokenizer):
    return probe_dataset(tiny_tokenizer, corpus_lines(400))


@pytest.mark.parametrize(
    "loader",
    [
        {"dataloader_num_workers": 0},
        {"dataloader_num_workers": 2},
        {"dataloader_num_workers": 2, "dataloader_persistent_workers": True},
        {"dataloader_num_workers": 1, "gradient_accumulation_steps": 2},
    ],
    ids=["main-process", "workers", "persistent-workers", "workers+accumulation"],
)
def test_switch_takes_effect_on_the_very_next_batch(tiny_model_dir, probe_data, tmp_path, loader):
    recorder, schedule, collator, _ = run_probe(
        tiny_model_dir, probe_data, tmp_path, phase_steps=[3, 4], max_steps=7, **loader
    )
    accumulation = loader.get("gradient_accumulation_steps", 1)
    assert len(recorder.records) == 7 * accumulation
    seen = [phase for _, phase in recorder.records]
    wanted = [expected_phase(step, [3]) for step, _ in recorder.records]
    assert seen == wanted, f"batches per step: {recorder.records}"
    assert schedule.phase_history == [(0, "0.1"), (3, "0.2")]
    # Counted once per batch trained on, for the phase it trained in (accelerate and the workers collate ahead).
    per_phase = [sum(n for (_, phase), n in zip(recorder.records, recorder.labelled) if phase == p) for p in (0, 1)]
    assert collator.stats.masked == per_phase


def test_resume_mid_phase_restores_phase_and_learning_rate(tiny_model_dir, probe_data, tmp_path):
    full_dir, resumed_dir = tmp_path / "full", tmp_path / "resumed"
    full, *_ = run_probe(tiny_model_dir, probe_data, full_dir, phase_steps=[4, 6], max_steps=10, save_steps=2)
    for checkpoint_step in (2, 6):  # the middle of phase 1 and of phase 2
        resumed_out = resumed_dir / str(checkpoint_step)
        import shutil

        shutil.copytree(full_dir / f"checkpoint-{checkpoint_step}", resumed_out / f"checkpoint-{checkpoint_step}")
        resumed, schedule, _, _ = run_probe(
            tiny_model_dir,
            probe_data,
            resumed_out,
            phase_steps=[4, 6],
            max_steps=10,
            resume=str(resumed_out / f"checkpoint-{checkpoint_step}"),
        )
        steps = [step for step, _ in resumed.records]
        assert steps[0] == checkpoint_step
        assert [phase for _, phase in resumed.records] == [expected_phase(s, [4]) for s in steps]
        for step, lr in resumed.learning_rates.items():
            assert lr == pytest.approx(full.learning_rates[step], rel=1e-9)
        assert schedule.phase_history[-1] == (4, "0.2")


def test_two_ranks_switch_at_the_same_step(tiny_model_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(400)))
    out = tmp_path / "ddp"
    env = dict(
        os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(Path(__file__).parent, Path(__file__).parents[1])
    )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29517",
        str(Path(__file__).parent / "phase_probe.py"),
        str(tiny_model_dir),
        str(corpus),
        str(out),
    ]
    result = run_launcher(command, env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["world"] == 2 for r in ranks)
    for rank in ranks:
        assert len(rank["records"]) == 8
        assert [p for _, p in rank["records"]] == [expected_phase(s, [3]) for s, _ in rank["records"]]
        assert [tuple(h) for h in rank["history"]] == [(0, "0.1"), (3, "0.2")]
