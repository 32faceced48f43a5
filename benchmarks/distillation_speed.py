#!/usr/bin/env python
"""Benchmark: NER prediction speed (test sentences per second) and parameter counts of the teacher
(all-MiniLM-L6-v2) and its compact students, in one run, models alternating round by round
(bioptimus_hf.distillation.speed.measure_inference_speed, the function behind the student card's speed).

Each model is loaded as a ``BertForTokenClassification`` with NCBI-disease's 3 labels (its classifier is untrained:
speed does not depend on it) and runs over the first --max_test_sentences NCBI-disease test sentences, batches of
--batch_size in file order, each padded to its longest sentence, truncated at --max_seq_length tokens (run_ner.py's
settings). The load average of the shared machine is recorded before and after.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/distillation_speed.py \\
        --model teacher=<MiniLM> --model top3_removed=DIR --model distilbiobert=DIR --model tinybiobert=DIR
"""

from __future__ import annotations

import argparse
import os
import sys

from transformers import AutoModelForTokenClassification, AutoTokenizer


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bioptimus_hf.distillation.speed import measure_inference_speed  # noqa: E402
from bioptimus_hf.distillation.student import encoder_depth, parameter_count  # noqa: E402
from bioptimus_hf.ner.conll import read_conll  # noqa: E402


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import ResultTarget, output_help  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, help="NAME=PATH; the first is the reference")
    parser.add_argument(
        "--test_file", default=os.path.join(ROOT, "..", "shared", "data", "ner", "NCBI-disease-IOB", "test.tsv")
    )
    parser.add_argument("--max_test_sentences", type=int, default=320)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default="distillation_speed", help=output_help("distillation_speed"))
    args = parser.parse_args()
    target = ResultTarget(args.output)
    named = [entry.split("=", 1) for entry in args.model]

    tokenizer = AutoTokenizer.from_pretrained(named[0][1])
    sentences = [s.tokens for s in read_conll(args.test_file).sentences][: args.max_test_sentences]
    batches = []
    for start in range(0, len(sentences), args.batch_size):
        words = sentences[start : start + args.batch_size]
        batches.append(
            tokenizer(
                words,
                is_split_into_words=True,
                truncation=True,
                max_length=args.max_seq_length,
                padding=True,
                return_tensors="pt",
            )
        )
    models, facts = {}, {}
    for name, path in named:
        model = AutoModelForTokenClassification.from_pretrained(path, num_labels=3)
        models[name] = model
        facts[name] = {
            "path": path,
            "layers": encoder_depth(model),
            "hidden_size": model.config.hidden_size,
            "parameters": parameter_count(model),
            "encoder_parameters": parameter_count(model.base_model),
        }

    load_before = os.getloadavg()
    speed = measure_inference_speed(models, batches, rounds=args.rounds)
    load_after = os.getloadavg()
    reference = named[0][0]
    for name in models:
        facts[name]["sentences_per_s"] = speed[f"{name}_sequences_per_s"]
        facts[name]["speedup_vs_" + reference] = round(
            speed[f"{name}_sequences_per_s"] / speed[f"{reference}_sequences_per_s"], 3
        )
    report = {
        "benchmark": "NER prediction speed (NCBI-disease test sentences/s) and size, teacher vs students, CPU",
        "setting": vars(args),
        "test_sentences": len(sentences),
        "measure": {k: v for k, v in speed.items() if not k.endswith("_sequences_per_s")},
        "models": facts,
        "load_average_1_5_15_min": {"before": load_before, "after": load_after},
        "note": "models alternate round by round, median round",
    }
    speedup = "speedup_vs_" + reference
    target.write(
        {name: {"sentences_per_s": row["sentences_per_s"], speedup: row[speedup]} for name, row in facts.items()},
        detail=report,
    )
    print(f"load average before {load_before}, after {load_after}")
    print(f"| model | layers | hidden | parameters | sentences/s | speed-up vs {reference} |")
    print("|---|---|---|---|---|---|")
    for name, row in facts.items():
        print(
            f"| {name} | {row['layers']} | {row['hidden_size']} | {row['parameters'] / 1e6:.1f}M "
            f"| {row['sentences_per_s']:.1f} | {row['speedup_vs_' + reference]:.2f}x |"
        )


if __name__ == "__main__":
    main()
