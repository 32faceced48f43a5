"""prepare-corpus against a plain ``xml.etree.ElementTree.iterparse`` extraction of the same PubMed files.

    SCRATCH=/tmp python benchmarks/pubmed_parse.py --work_dir $SCRATCH/pubmed_parse_1g --gzip_bytes 1e9 --repeats 1

The files: PubMed DTD files (``bioptimus_hf/testing/pubmed_files.py``) of ``--citations_per_file`` synthetic
citations (``benchmarks/pubmed_scale.py``'s: sentences of ``../shared/data/corpus``, 60 % structured abstracts),
written under ``--work_dir/xml_<shape>`` until their gzipped bytes reach ``--gzip_bytes``, and reused by a later run
with the same settings (``corpus.json`` there records them). Each of ``--record_shapes``: ``full``, a real record's
structure (authors with affiliations, MeSH, chemicals, history, article ids, references: the title and abstract a
minority of the bytes, ``title_abstract_share`` in the figures), and ``text``, little but the title and abstract.

The arms, each a process started from here, alternated in each repeat (their order rotates), for each shape:

* ``plain``: one process, ``iterparse(gzip.open(f), events=("end",))`` over the files in turn, each
  ``PubmedArticle``'s PMID, title and abstract text (``itertext``, sections after their labels, white space
  normalised: prepare-corpus's text) taken and the element cleared: the extraction a user writes by hand, which
  writes nothing.
* ``prepare_w<N>``: ``bioptimus prepare-corpus --num_workers N`` into a fresh directory: parse, merge by PMID, filter,
  shuffle, Parquet shards, manifest (``--on_error skip``; the directory removed after).

After the timed rounds, untimed: both arms on the first file, every shard row's text checked equal to the plain
extraction's for its PMID, and the citations read equal (``verified``; a difference ends the run).

Each shape is a section of the record (``figures.<shape>``), written as soon as its arms are done. Each arm's wall
seconds and CPU seconds (its whole process tree: user + system), the median over the repeats; the
figures are ``plain`` seconds over each arm's (>= 1.0: at least as fast as the plain extraction). On a machine shared
with other jobs, wall seconds carry the others' load (recorded at each run): the CPU seconds say what each arm costs.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import pubmed_scale
from _results import ResultTarget, output_help
from bioptimus_hf.commands import parse_args
from bioptimus_hf.testing.pubmed_files import SHAPES, text_share, write_pubmed_file


ROOT = Path(__file__).resolve().parents[1]

PLAIN = textwrap.dedent("""
    import gzip, json, os, sys
    import xml.etree.ElementTree as ET
    citations, dump = 0, {}
    for path in sys.argv[1:]:
        with gzip.open(path, "rb") as stream:
            for _, element in ET.iterparse(stream, events=("end",)):
                if element.tag != "PubmedArticle":
                    continue
                pmid = element.findtext("MedlineCitation/PMID")
                title = element.find("MedlineCitation/Article/ArticleTitle")
                title = " ".join("".join(title.itertext()).split()) if title is not None else ""
                sections = []
                for section in element.iterfind("MedlineCitation/Article/Abstract/AbstractText"):
                    label, body = section.get("Label"), "".join(section.itertext())
                    sections.append(f"{label}: {body}" if label else body)
                abstract = " ".join(" ".join(sections).split())
                text = f"{title} {abstract}".strip()
                citations += bool(pmid)
                if "PLAIN_DUMP" in os.environ:
                    dump[pmid] = text
                element.clear()
    if "PLAIN_DUMP" in os.environ:
        with open(os.environ["PLAIN_DUMP"], "w") as handle:
            json.dump(dump, handle)
    print(citations)
""")


@dataclass
class PubmedParseArguments:
    work_dir: str = field(default="pubmed_parse_work", metadata={"help": "Scratch: the XML files (kept, reused)."})
    gzip_bytes: list[float] = field(
        default_factory=lambda: [5e7],
        metadata={"help": "Gzipped XML to write and read (1e9: 1 GB), for each record shape in turn (one: for all)."},
    )
    citations_per_file: int = field(default=30_000, metadata={"help": "Citations per file (NLM's: ~30,000)."})
    record_shapes: list[str] = field(
        default_factory=lambda: ["full", "text"], metadata={"help": f"Shapes of the records: {', '.join(SHAPES)}."}
    )
    workers: list[int] = field(default_factory=lambda: [1, 2], metadata={"help": "prepare-corpus --num_workers arms."})
    repeats: int = field(default=3, metadata={"help": "Rounds of every arm, alternated."})
    corpus_dir: str = field(
        default=str(pubmed_scale.CORPUS_DIR), metadata={"help": "The sentences the citations are drawn from."}
    )
    seed: int = field(default=0)
    output_json: str = field(default="pubmed_parse", metadata={"help": output_help("pubmed_parse")})


def write_files(
    directory: Path, args: PubmedParseArguments, shape: str, gzip_bytes: float
) -> tuple[list[Path], float]:
    """Files of synthetic citations until their gzipped bytes reach ``gzip_bytes`` (reused when recorded), and
    the share of the XML bytes the title and abstract take (of the first file's first 2,000 records)."""
    directory.mkdir(parents=True, exist_ok=True)
    record_path = directory / "corpus.json"
    settings = {
        "gzip_bytes": gzip_bytes,
        "citations_per_file": args.citations_per_file,
        "seed": args.seed,
        "shape": shape,
    }
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    if record.get("settings") == settings and all((directory / name).is_file() for name in record["files"]):
        return [directory / name for name in record["files"]], record["title_abstract_share"]
    pubmed_scale.CORPUS_DIR = Path(args.corpus_dir)
    sentences = pubmed_scale.corpus_sentences()
    rng = np.random.default_rng(args.seed)
    files, total, pmid, share = [], 0, 0, None
    while total < gzip_bytes:
        records = [pubmed_scale.synthetic_record(pmid + i + 1, sentences, rng) for i in range(args.citations_per_file)]
        share = round(text_share(records[:2000], shape), 4) if share is None else share
        path = write_pubmed_file(directory / f"pubmed25n{len(files) + 1:04d}.xml.gz", records, shape=shape)
        files.append(path)
        total += path.stat().st_size
        pmid += args.citations_per_file
        print(f"wrote {path.name}: {total / 1e6:.0f} MB of {gzip_bytes / 1e6:.0f}", flush=True)
    record = {"settings": settings, "files": [p.name for p in files], "title_abstract_share": share}
    record_path.write_text(json.dumps(record))
    return files, share


def measure(command: list[str], env: dict | None = None) -> dict:
    """Run ``command``; its wall seconds, its process tree's CPU seconds and its last line of output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(command[:5])}... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3), "output": done.stdout.strip()}


def arm_command(arm: str, files: list[Path], scratch: Path) -> list[str]:
    if arm == "plain":
        return [sys.executable, "-c", PLAIN, *map(str, files)]
    workers = arm.removeprefix("prepare_w")
    return [sys.executable, "-m", "bioptimus_hf.commands", "prepare-corpus", "--input_files", *map(str, files),
            "--output_dir", str(scratch / arm), "--num_workers", workers, "--disable_tqdm", "true",
            "--on_error", "skip"]  # fmt: skip


def run_arms(arms: list[str], files: list[Path], scratch: Path, repeats: int) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {arm: [] for arm in arms}
    for repeat in range(repeats):
        order = arms[repeat % len(arms) :] + arms[: repeat % len(arms)]
        for arm in order:
            shutil.rmtree(scratch / arm, ignore_errors=True)
            result = {"load_average": [round(x, 2) for x in os.getloadavg()], "repeat": repeat}
            result.update(measure(arm_command(arm, files, scratch)))
            shutil.rmtree(scratch / arm, ignore_errors=True)
            runs[arm].append(result)
            print(f"{arm}: {result['seconds']:.1f} s, {result['cpu_seconds']:.1f} CPU s", flush=True)
    return runs


def verify(files: list[Path], scratch: Path) -> dict:
    """Both arms on the first file, untimed: every shard row's text is the plain extraction's for its PMID."""
    import pyarrow.parquet as pq

    dump = scratch / "plain.json"
    measure(arm_command("plain", files[:1], scratch), env={"PLAIN_DUMP": str(dump)})
    plain = json.loads(dump.read_text())
    shutil.rmtree(scratch / "prepare_w1", ignore_errors=True)
    measure(arm_command("prepare_w1", files[:1], scratch))
    manifest = json.loads((scratch / "prepare_w1" / "manifest.json").read_text())
    rows = pq.read_table(scratch / "prepare_w1" / manifest["shards"][0]["file"], columns=["pmid", "text"]).to_pylist()
    shutil.rmtree(scratch / "prepare_w1", ignore_errors=True)
    differing = [row["pmid"] for row in rows if plain.get(str(row["pmid"])) != row["text"]]
    if differing or manifest["counts"]["citations_read"] != len(plain):
        raise SystemExit(f"error: the arms' texts differ (PMIDs {differing[:5]}) or their citations read do")
    return {"rows_compared": len(rows), "citations_read": len(plain), "texts_equal": True}


def figures_of(runs: dict[str, list[dict]], gzip_mb: float) -> dict:
    median = {
        arm: {k: float(np.median([r[k] for r in rs])) for k in ("seconds", "cpu_seconds")} for arm, rs in runs.items()
    }
    figures = {"input_gz_mb": round(gzip_mb, 1)}
    for arm, m in median.items():
        figures[arm] = {
            "seconds": round(m["seconds"], 2),
            "cpu_seconds": round(m["cpu_seconds"], 2),
            "gz_mb_per_second": round(gzip_mb / m["seconds"], 2),
        }
        if arm != "plain":
            figures[arm]["speed_vs_plain"] = round(median["plain"]["seconds"] / m["seconds"], 3)
            figures[arm]["cpu_vs_plain"] = round(median["plain"]["cpu_seconds"] / m["cpu_seconds"], 3)
    return figures


def main() -> None:
    (args,) = parse_args((PubmedParseArguments,), description=__doc__)
    unknown = sorted(set(args.record_shapes) - set(SHAPES))
    if unknown:
        raise SystemExit(f"error: --record_shapes: {unknown[0]} is not one of {', '.join(SHAPES)}")
    sizes = args.gzip_bytes * len(args.record_shapes) if len(args.gzip_bytes) == 1 else args.gzip_bytes
    if len(sizes) != len(args.record_shapes):
        raise SystemExit("error: --gzip_bytes: one size, or one for each of --record_shapes")
    target = ResultTarget(args.output_json)
    work = Path(args.work_dir)
    arms = ["plain", *(f"prepare_w{n}" for n in args.workers)]
    for shape, gzip_bytes in zip(args.record_shapes, sizes):
        files, share = write_files(work / f"xml_{shape}", args, shape, gzip_bytes)
        gzip_mb = sum(p.stat().st_size for p in files) / 1e6
        runs = run_arms(arms, files, work / "runs", args.repeats)
        checked = verify(files, work / "runs")
        loads = [run["load_average"][0] for arm_runs in runs.values() for run in arm_runs]
        figures = {"title_abstract_share": share, **figures_of(runs, gzip_mb)}
        figures["load_average_1min"] = {"min": min(loads), "max": max(loads)}  # other jobs on the machine
        detail = {"runs": runs, "files": len(files), "verified": checked, "cores": os.cpu_count()}
        target.write(figures, detail={**detail, "settings": asdict(args)}, section=shape)  # a section a shape
        print(json.dumps({shape: figures}, indent=2), flush=True)


if __name__ == "__main__":
    main()
