#!/usr/bin/env python
"""Padding per batch: run_mlm --line_by_line (pad to the longest in the batch) vs our packed blocks.

No training: tokenization and collation only.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/pretraining_padding.py
"""

from __future__ import annotations

import json

from _pretraining_bench import BenchmarkArguments, check_model_dir, padding_report, save_section
from bioptimus_hf.commands import parse_args


def main():
    (args,) = parse_args((BenchmarkArguments,), description=__doc__)
    check_model_dir(args)
    result = padding_report(args)
    print(json.dumps(result, indent=1))
    keys = ("line_by_line_padding_fraction", "line_by_line_max_length_padding_fraction")
    figures = {key: result[key] for key in keys if key in result}
    save_section(args, "padding", result, figures=figures)


if __name__ == "__main__":
    main()
