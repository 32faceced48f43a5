"""benchmarks/blurb_concurrency.py and benchmarks/blurb_gpu.sh: the command each run gets, and the dry run that
lists the jobs and a plan (the GPU script's, for an H100, on this CPU), so that the GPU script is known to start."""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bioptimus_hf.blurb.benchmark_config import BenchmarkArguments
from bioptimus_hf.commands import parse_args
from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert, write_dataset_dir


ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("blurb_concurrency", ROOT / "benchmarks" / "blurb_concurrency.py")
blurb_concurrency = importlib.util.module_from_spec(spec)
spec.loader.exec_module(blurb_concurrency)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    model = build_tiny_bert(str(root / "model"))
    write_task_dir(root / "blurb" / "GAD", "relation_extraction", sizes=(12, 6, 6))
    write_task_dir(root / "blurb" / "BIOSSES", "sentence_similarity", sizes=(8, 6, 6))
    write_dataset_dir(str(root / "ner" / "NCBI-disease-IOB"), sizes=(8, 4, 4))
    return root, model


def test_each_run_is_the_command_with_the_budget_and_its_jobs(data, tmp_path):
    root, model = data
    args = blurb_concurrency.parse_args(["--model_name_or_path", model, "--blurb_dir", str(root / "blurb")])
    argv = blurb_concurrency.blurb_argv(args, str(tmp_path / "out"), "2")
    (parsed,) = parse_args((BenchmarkArguments,), argv)
    assert parsed.jobs == "2" and parsed.disable_tqdm and parsed.seeds == [1, 2, 3]
    assert parsed.datasets == ["BIOSSES", "GAD", "PubMedQA"] and parsed.ner_dir is None
    budget = blurb_concurrency.COMPARE_BUDGET
    assert (parsed.max_train_samples, parsed.max_eval_samples, parsed.max_test_samples, parsed.num_train_epochs) == (
        budget["max_train_samples"],
        budget["max_eval_samples"],
        budget["max_test_samples"],
        budget["num_train_epochs"],
    )
    table = blurb_concurrency.parse_args(["--mode", "table", "--model_name_or_path", model])
    (parsed,) = parse_args((BenchmarkArguments,), blurb_concurrency.blurb_argv(table, "out", "auto"))
    assert parsed.max_train_samples is None and parsed.num_train_epochs is None and parsed.datasets is None
    assert parsed.seeds == BenchmarkArguments.__dataclass_fields__["seeds"].default_factory()  # the command's


def test_dry_run_lists_the_jobs_longest_first(data, capsys):
    root, model = data
    argv = ["--dry_run", "--model_name_or_path", model, "--blurb_dir", str(root / "blurb")]
    blurb_concurrency.main(argv + ["--datasets", "BIOSSES", "GAD", "--seeds", "1", "2", "--assume_cores", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "4 jobs on cpu: up to 2 at once, 1 thread(s) each"
    # 1 epoch over the first 8 / 12 rows at 64 tokens (the model's positions): GAD's 12 rows first
    assert [line.split(" estimate")[0].strip() for line in lines[1:]] == [
        "GAD seed 1",
        "GAD seed 2",
        "BIOSSES seed 1",
        "BIOSSES seed 2",
    ]


def test_the_gpu_script_dry_run_plans_the_whole_table_for_an_h100(data):
    root, model = data
    env = dict(
        os.environ,
        DRY_RUN="1",
        PY=sys.executable,
        MODEL=model,
        BLURB_DIR=str(root / "blurb"),
        NER_DIR=str(root / "ner"),
        SEEDS="1 2 3",
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "blurb_gpu.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "9 jobs on cuda: up to 9 at once, 1 thread(s) each, memory budget 75.0 GiB"
    names = [line.split(" estimate")[0].strip() for line in lines[1:]]
    assert sorted(names) == sorted(f"{d} seed {s}" for d in ("NCBI-disease-IOB", "GAD", "BIOSSES") for s in (1, 2, 3))


def test_the_table_files_each_jobs_steps_and_the_sampled_gpu_utilisation(tmp_path, monkeypatch):
    """Per-job steps/s come from the seed files; utilisation from nvidia-smi's samples (a fake one here, printing
    two GPUs' lines then waiting to be stopped), and none where there is no nvidia-smi."""
    import json

    for dataset, seed, speed in (("GAD", 1, 12.0), ("GAD", 2, 10.0), ("BIOSSES", 1, None)):
        run = {"seed": seed, "train_runtime_s": 3.04, "test_score": 0.5}
        if speed is not None:
            run["train_steps_per_second"] = speed
        (tmp_path / "table" / dataset / f"seed_{seed}").mkdir(parents=True)
        (tmp_path / "table" / dataset / f"seed_{seed}" / "seed_results.json").write_text(json.dumps({"run": run}))
    speeds = blurb_concurrency.per_job_speeds(tmp_path / "table")
    assert speeds["GAD"] == {
        "1": {"steps_per_s": 12.0, "train_runtime_s": 3.0},
        "2": {"steps_per_s": 10.0, "train_runtime_s": 3.0},
    }
    assert speeds["BIOSSES"]["1"]["steps_per_s"] is None  # a seed written before steps/s was recorded

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\nprintf '0, 80, 1000\\n1, 0, 10\\n0, 40, 3000\\n1, 0, 10\\n0, 0, 2000\\n'\nexec sleep 60\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with blurb_concurrency.DeviceUtilisation(tmp_path / "util.csv") as sampled:
        for _ in range(100):  # until the fake has printed its lines
            if (tmp_path / "util.csv").exists() and (tmp_path / "util.csv").read_text().count("\n") == 5:
                break
            time.sleep(0.05)
    summary = sampled.summary()
    assert summary["0"] == {
        "samples": 3,
        "interval_ms": 500,
        "utilisation_pct_mean": 40.0,
        "utilisation_pct_median": 40,
        "busy_fraction": 0.667,
        "memory_mib_max": 3000,
    }
    assert summary["1"]["busy_fraction"] == 0.0 and summary["1"]["samples"] == 2
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with blurb_concurrency.DeviceUtilisation(tmp_path / "none.csv") as none:
        pass
    assert none.summary() is None
