#!/usr/bin/env python
"""Contextualised initialisation in bf16 vs float32: speed, agreement of the rows, held-out loss at step 0.

Setting: all-MiniLM-L6-v2 base, a WordPiece vocabulary trained on ../shared/data/corpus (--vocab_size),
the --num_tokens new tokens most frequent in the held-out text (BLURB NER devel sentences, none in the
corpus), --max_contexts_per_token contexts each. The same contexts are encoded by
``ContextualizedEmbeddingInitializer.contextualized_vectors`` with ``init_precision`` float32 and bf16,
alternating (float32, bf16, float32, bf16, ...) in one process, so load from other processes hits both.

* speed: encoded tokens (attention-mask ones) per second of the encoding loop;
* agreement: cosine between the bf16 and float32 vector of each token (target: median >= 0.999);
* held-out MLM loss at step 0 of the two initialised models on the same masks. MiniLM ships no MLM head:
  the head is first warmed up once on the base model (init_quality.py's warm_up_head, encoder frozen)
  and both models start from that warmed base; losses are compared per masked token (paired), with
  standard errors.

bf16 is measured even where the CPU lacks native bf16 (``init_precision bf16`` is honoured everywhere):
there it shows the emulation's cost, which is why ``auto`` picks float32 on such a CPU.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/init_precision.py
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections import Counter

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

from _results import ResultTarget, output_help
from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.utils.hardware import describe_hardware
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from bioptimus_hf.vocabulary.qikfind import FindOptions, find_contexts
from bioptimus_hf.vocabulary.tokenizer_training import train_tokenizer
from init_quality import NER_SETS, masked_batches, minilm_dir, ner_sentences, warm_up_head


@torch.inference_mode()
def per_token_losses(model, tokenizer, sentences, max_length):
    """Cross-entropy of every masked token (fixed-seed masks: the same for every model of one vocabulary)."""
    model.eval()
    losses = []
    for batch in masked_batches(tokenizer, sentences, 32, max_length, seed=1234):
        hidden = model.base_model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        selected = batch["labels"] != -100
        logits = model.cls(hidden[selected]).float()
        losses.extend(torch.nn.functional.cross_entropy(logits, batch["labels"][selected], reduction="none").tolist())
    return losses


def mean_and_standard_error(values):
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default="../shared/data")
    parser.add_argument("--vocab_size", type=int, default=4000)
    parser.add_argument(
        "--num_tokens", type=int, default=60, help="new tokens contextualised (most frequent in held-out)"
    )
    parser.add_argument("--max_contexts_per_token", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="alternating (float32, bf16) rounds")
    parser.add_argument("--init_batch_size", type=int, default=32)
    parser.add_argument("--heldout_per_set", type=int, default=100)
    parser.add_argument("--head_warmup_sentences", type=int, default=300)
    parser.add_argument("--head_warmup_steps", type=int, default=100)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="init_precision", help=output_help("init_precision"))
    args = parser.parse_args()
    target = ResultTarget(args.output)

    started = time.perf_counter()
    corpus_dir = os.path.join(args.data_dir, "corpus")
    files = sorted(os.path.join(corpus_dir, f) for f in os.listdir(corpus_dir) if f.endswith(".txt"))
    base_dir = minilm_dir()
    base_tok = AutoTokenizer.from_pretrained(base_dir)
    tok_dir = os.path.join(tempfile.mkdtemp(prefix="init_precision_"), "tokenizer")
    train_tokenizer(files, base_tok, vocab_size=args.vocab_size, output_dir=tok_dir, show_progress=False)
    new_tok = AutoTokenizer.from_pretrained(tok_dir)
    heldout = ner_sentences(args.data_dir, args.heldout_per_set)

    base_vocab = base_tok.get_vocab()
    new_ids = {i for t, i in new_tok.get_vocab().items() if t not in base_vocab and i not in new_tok.all_special_ids}
    frequency = Counter(
        i for ids in new_tok(heldout, add_special_tokens=False)["input_ids"] for i in ids if i in new_ids
    )
    targets = [i for i, _ in frequency.most_common(args.num_tokens)]
    contexts = find_contexts(
        files, new_tok, targets, FindOptions(args.max_contexts_per_token, args.seed), progress=False
    )

    base = AutoModelForMaskedLM.from_pretrained(base_dir)
    corpus = [
        line.strip()
        for line in open(os.path.join(corpus_dir, "pubmed_sentences.txt"), encoding="utf-8")
        if line.strip()
    ]
    warmup = warm_up_head(
        base,
        base_tok,
        random.Random(args.seed).sample(corpus, args.head_warmup_sentences),
        args.head_warmup_steps,
        128,
        1e-3,
        args.max_seq_length,
        args.seed,
    )

    def initializer(precision):
        config = EmbeddingInitArguments(
            init_strategy="contextualized",
            init_norm_match=True,
            init_device="cpu",
            init_precision=precision,
            max_contexts_per_token=args.max_contexts_per_token,
            init_batch_size=args.init_batch_size,
        )
        return ContextualizedEmbeddingInitializer(
            copy.deepcopy(base), base_tok, new_tok, config, seed=args.seed, progress=False
        )

    runs, vectors = [], {}
    for round_index in range(args.rounds):
        for precision in ("float32", "bf16"):
            init = initializer(precision)
            t0 = time.perf_counter()
            result, stats = init.contextualized_vectors(contexts)
            seconds = time.perf_counter() - t0
            vectors.setdefault(precision, result)
            runs.append(
                {
                    "round": round_index,
                    "precision": precision,
                    "bf16": stats["bf16"],
                    "seconds": seconds,
                    "encoded_tokens": stats["encoded_tokens"],
                    "tokens_per_second": stats["encoded_tokens"] / seconds,
                    "load_average_1m": os.getloadavg()[0],
                }
            )
            print(runs[-1], flush=True)

    ids = sorted(vectors["float32"])
    cosines = torch.nn.functional.cosine_similarity(
        torch.stack([vectors["bf16"][i] for i in ids]), torch.stack([vectors["float32"][i] for i in ids]), dim=1
    ).tolist()
    models = {p: initializer(p).initialize(precomputed_vectors=vectors[p])[0] for p in ("float32", "bf16")}
    losses = {p: per_token_losses(models[p], new_tok, heldout, args.max_seq_length) for p in models}
    differences = [b - f for b, f in zip(losses["bf16"], losses["float32"])]

    def speed(precision):
        return statistics.median(r["tokens_per_second"] for r in runs if r["precision"] == precision)

    summary = {
        "tokens_per_second_float32": speed("float32"),
        "tokens_per_second_bf16": speed("bf16"),
        "bf16_speedup": speed("bf16") / speed("float32"),
        "cosine_median": statistics.median(cosines),
        "cosine_min": min(cosines),
        "cosine_fraction_ge_0.999": sum(c >= 0.999 for c in cosines) / len(cosines),
        "heldout_loss_float32": mean_and_standard_error(losses["float32"]),
        "heldout_loss_bf16": mean_and_standard_error(losses["bf16"]),
        "heldout_loss_paired_difference_bf16_minus_float32": mean_and_standard_error(differences),
        "masked_tokens": len(differences),
    }
    report = {
        "setting": vars(args),
        "heldout": {"source": [f"ner/{n}/devel.tsv" for n in NER_SETS], "sentences": len(heldout)},
        "contextualised_tokens": len(ids),
        "sampled_pairs": sum(len(found) for found in contexts.values()),
        "head_warmup": warmup,
        "hardware": describe_hardware(),
        "load_average_end": os.getloadavg(),
        "summary": summary,
        "runs": runs,
        "cosines": cosines,
        "wall_s": time.perf_counter() - started,
    }
    target.write(
        {
            key: summary[key]
            for key in (
                "tokens_per_second_float32",
                "tokens_per_second_bf16",
                "bf16_speedup",
                "cosine_median",
                "cosine_min",
            )
        },
        detail=report,
    )
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
