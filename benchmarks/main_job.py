#!/usr/bin/env python
"""The main job's record: what a finished ``bash scripts/demo.sh`` produced, filed under this machine's kind.

    bash scripts/demo.sh && python benchmarks/main_job.py                  # after the demo, from the repository root
    python benchmarks/main_job.py --wall_s 1234 --cpu_s 2400 --note "..."  # its times as measured, conditions

Reads the demo's releases (``outputs/demo_minilm/releases/v0.k/bioptimus_phase.json``: each release's phase,
realised masked fraction and held-out MLM loss under its own masking), the run's ``train_results.json`` and
``init_report.json`` (the contextualised initialisation's forward passes and timings) and the vocabulary's
``coverage_report.json``, and writes ``benchmarks/results/<machine kind>/main_job.json``
(docs/main_job.md quotes it). Nothing is re-run: the figures are the demo's own.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # appended: its scripts never shadow packages
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import ResultTarget, output_help  # noqa: E402
from bioptimus_hf.releases.record import ReleaseInfo, find_releases  # noqa: E402
from bioptimus_hf.utils.files import read_json  # noqa: E402


DEMO_COMMAND = "bash scripts/demo.sh && python benchmarks/main_job.py"


def release_figures(run_dir: Path) -> dict[str, dict]:
    """Per release version: its phase, step, realised masked fraction and held-out MLM loss (own masking)."""
    figures = {}
    for release in find_releases(run_dir):
        info = ReleaseInfo.load(release)
        figures[f"v{info.version}"] = {
            "masking_unit": info.masking_unit,
            "masking_rate": info.masking_rate,
            "corruption": info.corruption,
            "global_step": info.global_step,
            "realised_masked_fraction": info.realised_masked_fraction,
            "heldout_mlm_loss": info.heldout_mlm_loss,
        }
    return figures


def vocabulary_figures(tokenizer_dir: Path) -> dict:
    """The vocabulary's coverage of the sampled corpus words (its ``coverage_report.json``), as fractions."""
    report = read_json(tokenizer_dir / "coverage_report.json")
    sample = report["sample"]
    words = sample["words"]
    return {
        "vocab_size": report["new_vocab_size"],
        "shared_tokens": report["shared_tokens"],
        "new_tokens": report["new_tokens"],
        "sampled_words": words,
        "words_split_into_fewer_pieces": sample["new_splits_fewer"] / words,
        "words_split_equally": sample["new_splits_equal"] / words,
        "words_split_into_more_pieces": sample["new_splits_more"] / words,
        "base_pieces_per_word": sample["base_pieces_per_word"],
        "new_pieces_per_word": sample["new_pieces_per_word"],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run_dir", default="outputs/demo_minilm", help="the demo's output_dir")
    parser.add_argument("--tokenizer_dir", default="outputs/demo_minilm_tokenizer", help="the demo's vocabulary")
    parser.add_argument("--wall_s", type=float, help="the demo's wall time in seconds, as measured (time bash ...)")
    parser.add_argument("--cpu_s", type=float, help="the demo's CPU time in seconds (user + system), as measured")
    parser.add_argument("--note", help="the conditions of the run (e.g. other jobs on the machine)")
    parser.add_argument("--output", default="main_job", help=output_help("main_job"))
    args = parser.parse_args(argv)
    target = ResultTarget(args.output)

    run_dir = Path(args.run_dir)
    releases = release_figures(run_dir)
    last = ReleaseInfo.load(find_releases(run_dir)[-1])
    train = read_json(run_dir / "train_results.json")
    figures = {
        "releases": releases,
        "training_s": train.get("train_runtime"),
        "vocabulary": vocabulary_figures(Path(args.tokenizer_dir)),
    }
    if (run_dir / "init_report.json").is_file():
        init = read_json(run_dir / "init_report.json")
        figures["initialisation"] = {
            "forward_passes": init["forward"]["forward_passes"],
            "find_contexts_s": init["timings_s"]["find_contexts"],
            "encode_contexts_s": init["timings_s"]["encode_contexts"],
        }
    if args.wall_s is not None:
        figures["demo_wall_s"] = args.wall_s
    if args.cpu_s is not None:
        figures["demo_cpu_s"] = args.cpu_s
    detail = {
        "run": {
            key: getattr(last.run, key, None)
            for key in ("base_model", "init_strategy", "max_steps", "bf16", "dropout_masks", "masking_stream")
        },
        "train_results": train,
        "note": args.note,
    }
    target.write(figures, detail=detail, command=DEMO_COMMAND)
    for version, release in releases.items():
        print(
            f"{version}: realised masked fraction {release['realised_masked_fraction']}, "
            f"held-out MLM loss {release['heldout_mlm_loss']}"
        )
    return figures


if __name__ == "__main__":
    main()
