#!/usr/bin/env python
"""Benchmark: tagging throughput of ``NerTagger`` against transformers' token-classification pipeline
and against the model's bare forward pass over the same windows, plus float32-vs-bf16 entity agreement.

Throughput (words/s, words by the tokenizer's pre-tokenizer) on the last ``--abstracts`` raw PubMed
abstracts of ../shared/data/corpus/pubmed_abstracts.txt, three arms measured alternately in one run:

- ``tagger``: ``NerTagger(model)(abstracts)`` end to end (split, window, tokenize, forward, merge, decode);
- ``pipeline``: ``pipeline("token-classification", aggregation_strategy="first", stride=32)`` on the
  same abstracts, handed the tagger's own model (so in the tagger's precision), its default batching;
- ``pipeline_default``: the same pipeline as a user calls it, ``pipeline(..., model=<directory>)``: it loads
  the model itself, in the dtype the checkpoint was saved in (float32 for run_ner.py's models), whatever
  the hardware offers. The tagger's entities are compared with both pipelines', abstract by abstract;
- ``forward``: only ``model(**batch)`` over the tagger's own windows and batches (built untimed): the
  ceiling the tagger's overhead is measured against.

With ``--ncbi_model`` (a model fine-tuned by run_ner.py on NCBI-disease) the NCBI-disease test
sentences (tokens joined by spaces) are tagged in float32 and each bf16 mode; the JSON counts the
sentences whose entities differ and gives entity-level F1 of each path against the gold spans.

With ``--composition_models SET=MODEL,...`` (models fine-tuned on those BLURB sets) each set's test
sentences are tagged three ways in each of ``--composition_precisions``: the file in order (the
reference), the file shuffled (other neighbours, hence other batches and padding), and one sentence per
call with ``batch_size=1`` (no neighbours at all); the JSON counts the sentences whose entities change
with the batch composition and gives the entity F1 of every path: what a user who tags the same
abstract twice, in different files, can expect.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/ner_tagging.py --model M --ncbi_model M
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/ner_tagging.py --model M --skip_throughput \
        --composition_models NCBI-disease=/tmp/ner_models/NCBI-disease/seed_1,BC5CDR-chem=...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
from transformers import pipeline


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


from _results import ResultTarget, output_help  # noqa: E402
from bioptimus_hf.ner.conll import read_conll  # noqa: E402
from bioptimus_hf.ner.evaluation import span_scores  # noqa: E402
from bioptimus_hf.ner.tagger import NerTagger  # noqa: E402
from bioptimus_hf.utils.hardware import device_has_fast_bf16  # noqa: E402


def last_lines(path: str, count: int) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for line in handle]
    return lines[-count:]


def timed(function):
    load = os.getloadavg()[0]
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, load, result


def tagging_figures(report: dict) -> dict:
    """The headline figures: best words/s per arm, the tagger's lead over each pipeline (best against best, and per
    round where recorded), and the bare forward's over the tagger."""
    measured = report.get("throughput") or {}
    figures = {
        "precision": measured.get("precision"),
        "abstracts": measured.get("abstracts"),
        "words_per_s": {arm: round(value) for arm, value in (measured.get("best_words_per_s") or {}).items()},
    }
    for key in ("tagger_over_pipeline", "tagger_over_pipeline_default", "forward_over_tagger"):
        if measured.get(key) is not None:
            figures[key] = round(measured[key], 2)
    for key, ratios in (measured.get("per_round") or {}).items():
        figures[f"{key}_rounds"] = [round(ratio, 2) for ratio in ratios["ratios"]]
        figures[f"{key}_median"] = round(ratios["median"], 2)
    return {key: value for key, value in figures.items() if value not in (None, {})}


def throughput(args, abstracts: list[str]) -> dict:
    tagger = NerTagger(args.model, batch_size=args.batch_size, precision=args.precision)
    words, encoding = tagger.encode(abstracts)
    word_count = sum(len(w) for w in words)
    token_count = sum(len(ids) for ids in encoding.columns["input_ids"])
    batches = [batch for _, batch in tagger.batches(encoding.columns["input_ids"])]
    padded = sum(b["input_ids"].numel() for b in batches)
    token_classifier = pipeline(
        "token-classification",
        model=tagger.model,
        tokenizer=tagger.tokenizer,
        aggregation_strategy="first",
        stride=32,
        device=tagger.device,
    )
    default_classifier = pipeline(
        "token-classification", model=args.model, aggregation_strategy="first", stride=32, device=tagger.device
    )

    def forward():
        with torch.inference_mode(), tagger.autocast():
            for batch in batches:
                tagger.model(**batch)

    arms = {
        "tagger": lambda: tagger(abstracts),
        "pipeline": lambda: token_classifier(abstracts),
        "pipeline_default": lambda: default_classifier(abstracts),
        "forward": forward,
    }
    runs = {name: [] for name in arms}
    outputs = {}
    for round_index in range(args.rounds):
        names = list(arms) if round_index % 2 == 0 else list(reversed(arms))  # alternate the order
        for name in names:
            seconds, load, outputs[name] = timed(arms[name])
            runs[name].append({"seconds": seconds, "words_per_s": word_count / seconds, "loadavg_1min": load})
            print(
                f"round {round_index} {name}: {seconds:.1f} s, {word_count / seconds:.0f} words/s (load {load:.1f})",
                flush=True,
            )
    best = {name: max(r["words_per_s"] for r in rs) for name, rs in runs.items()}
    entities = {
        name: outputs[name] if name == "tagger" else [[pipeline_entity(e) for e in found] for found in outputs[name]]
        for name in ("tagger", "pipeline", "pipeline_default")
    }
    return {
        "abstracts": len(abstracts),
        "words": word_count,
        "window_tokens": token_count,
        "windows": len(encoding.windows),
        "padded_tokens_in_batches": padded,
        "precision": tagger.precision,
        "batch_size": args.batch_size,
        "pipeline_default_dtype": str(default_classifier.model.dtype),
        "runs": runs,
        "best_words_per_s": best,
        "tagger_over_pipeline": best["tagger"] / best["pipeline"],
        "tagger_over_pipeline_default": best["tagger"] / best["pipeline_default"],
        # round by round (the arms of a round ran back to back): the figures the docs quote, median included
        "per_round": {
            f"tagger_over_{name}": per_round(runs["tagger"], runs[name]) for name in ("pipeline", "pipeline_default")
        },
        "forward_over_tagger": best["forward"] / best["tagger"],
        "entities": {name: sum(len(e) for e in found) for name, found in entities.items()},
        # abstract by abstract: the tagger's entities against each pipeline's ("reference")
        "tagger_vs_pipeline": differences(entities["tagger"], entities["pipeline"]),
        "tagger_vs_pipeline_default": differences(entities["tagger"], entities["pipeline_default"]),
    }


def per_round(faster: list[dict], baseline: list[dict]) -> dict:
    """words/s ratios of two arms round by round, and their median."""
    ratios = [a["words_per_s"] / b["words_per_s"] for a, b in zip(faster, baseline)]
    return {"ratios": ratios, "median": statistics.median(ratios)}


def pipeline_entity(entity: dict) -> dict:
    """A pipeline's aggregated entity (the tagger's keys) with a Python float score, as JSON takes it."""
    return {**entity, "score": float(entity["score"])}


def test_texts(args, dataset: str):
    """A set's test sentences (tokens joined by spaces) and each token's character offset in its text."""
    test = read_conll(os.path.join(args.data_root, f"{dataset}-IOB", "test.tsv"))
    sentences = test.sentences[: args.max_test_sentences or None]
    texts = [" ".join(s.tokens) for s in sentences]
    starts = []  # character offset of every token in its joined text
    for sentence in sentences:
        offsets, position = [], 0
        for token in sentence.tokens:
            offsets.append(position)
            position += len(token) + 1
        starts.append(offsets)
    return sentences, texts, starts


def to_token_spans(entities, offsets):
    # the tokens the entity's characters touch (the tagger's words are the same or finer)
    spans = []
    for e in entities:
        first = max(i for i, o in enumerate(offsets) if o <= e["start"])
        last = max(i for i, o in enumerate(offsets) if o < e["end"])
        spans.append((e["entity_group"], first, last + 1))
    return spans


def entity_key(entity):
    return entity["entity_group"], entity["start"], entity["end"]


def differences(path, reference) -> dict:
    """How ``path``'s entities differ from ``reference``'s, sentence by sentence."""
    return {
        "sentences_with_different_entities": sum(
            {entity_key(e) for e in a} != {entity_key(e) for e in b} for a, b in zip(path, reference)
        ),
        "entities_only_here": sum(
            len({entity_key(e) for e in a} - {entity_key(e) for e in b}) for a, b in zip(path, reference)
        ),
        "entities_only_in_reference": sum(
            len({entity_key(e) for e in b} - {entity_key(e) for e in a}) for a, b in zip(path, reference)
        ),
        "max_score_difference_on_shared_entities": max(
            [
                abs(x["score"] - y["score"])
                for a, b in zip(path, reference)
                for x in a
                for y in b
                if entity_key(x) == entity_key(y)
            ]
            or [0.0]
        ),
    }


def batch_composition(args) -> dict:
    """Per set and precision: the test file tagged in order, shuffled, and one sentence at a time."""
    import random

    report = {"batch_size": args.batch_size, "sets": {}}
    for item in args.composition_models.split(","):
        dataset, model = item.split("=", 1)
        sentences, texts, starts = test_texts(args, dataset)
        order = list(range(len(texts)))
        random.Random(args.seed).shuffle(order)
        per_set = report["sets"][dataset] = {"model": model, "sentences": len(texts), "precisions": {}}
        for precision in args.composition_precisions.split(","):
            tagger = NerTagger(model, batch_size=args.batch_size, precision=precision)
            alone = NerTagger(model, batch_size=1, precision=precision)
            in_order = tagger(texts)
            shuffled_out = tagger([texts[i] for i in order])
            shuffled = [None] * len(texts)
            for position, index in enumerate(order):
                shuffled[index] = shuffled_out[position]
            one_by_one = [alone(text) for text in texts]
            entry = {"resolved": tagger.precision, "paths": {}}
            for name, path in (("in_order", in_order), ("shuffled", shuffled), ("one_at_a_time", one_by_one)):
                scores = span_scores(sentences, [to_token_spans(e, o) for e, o in zip(path, starts)])
                entry["paths"][name] = {**scores, **({} if name == "in_order" else differences(path, in_order))}
            per_set["precisions"][precision] = entry
            print(
                dataset,
                precision,
                tagger.precision,
                {
                    name: (round(100 * p["f1"], 2), p.get("sentences_with_different_entities"))
                    for name, p in entry["paths"].items()
                },
                flush=True,
            )
    return report


def ncbi_agreement(args) -> dict:
    sentences, texts, starts = test_texts(args, "NCBI-disease")
    paths, report = {}, {"sentences": len(sentences), "model": args.ncbi_model, "paths": {}}
    for precision in ["float32"] + args.compare_precisions.split(","):
        tagger = NerTagger(args.ncbi_model, batch_size=args.batch_size, precision=precision)
        seconds, load, paths[precision] = timed(lambda: tagger(texts, progress=True))
        predicted = [to_token_spans(e, o) for e, o in zip(paths[precision], starts)]
        scores = span_scores(sentences, predicted)
        entry = {"seconds": seconds, "loadavg_1min": load, **scores}
        if precision != "float32":
            found = differences(paths[precision], paths["float32"])
            found["entities_only_in_float32"] = found.pop("entities_only_in_reference")
            entry.update(found)
        report["paths"][precision] = entry
        print(precision, dict(entry.items()), flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a token-classification model directory")
    parser.add_argument(
        "--corpus", default=os.path.join(ROOT, "..", "shared", "data", "corpus", "pubmed_abstracts.txt")
    )
    parser.add_argument("--abstracts", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--precision", default="auto", help="the tagger's precision for the throughput arms")
    parser.add_argument("--ncbi_model", default=None, help="a model fine-tuned on NCBI-disease (float32 vs bf16)")
    parser.add_argument("--compare_precisions", default="bf16,bf16-autocast")
    parser.add_argument("--max_test_sentences", type=int, default=0, help="0: the whole NCBI-disease test set")
    parser.add_argument("--data_root", default=os.path.join(ROOT, "..", "shared", "data", "ner"))
    parser.add_argument(
        "--composition_models",
        default=None,
        help="SET=MODEL,...: BLURB sets (folder name without -IOB) and models fine-tuned on them",
    )
    parser.add_argument("--composition_precisions", default="float32,auto")
    parser.add_argument("--seed", type=int, default=0, help="the shuffled file's order")
    parser.add_argument("--skip_throughput", action="store_true")
    parser.add_argument(
        "--retain_freed_memory",
        action="store_true",
        help="glibc keeps freed memory in the process (bioptimus_hf/utils/allocator.py), for every arm",
    )
    parser.add_argument("--output", default="ner_tagging", help=output_help("ner_tagging"))
    args = parser.parse_args()
    target = ResultTarget(args.output)

    report = {
        "benchmark": "NerTagger vs pipeline('token-classification') vs bare forward; float32 vs bf16 entities",
        "setting": vars(args),
        "process": {
            "cpu_bf16_native": device_has_fast_bf16("cpu"),
            "loadavg_at_start": os.getloadavg(),
            "note": "loadavg recorded per arm",
        },
    }
    if args.retain_freed_memory:
        from bioptimus_hf.utils.allocator import retain_freed_memory

        report["process"]["allocator"] = retain_freed_memory()
    if not args.skip_throughput:
        report["throughput"] = throughput(args, last_lines(args.corpus, args.abstracts))
    if args.ncbi_model:
        report["ncbi_float32_vs_bf16"] = ncbi_agreement(args)
    if args.composition_models:
        report["batch_composition"] = batch_composition(args)
    report["process"]["loadavg_at_end"] = os.getloadavg()
    target.write(tagging_figures(report), detail=report)
    print(json.dumps({k: v for k, v in report.get("throughput", {}).items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
