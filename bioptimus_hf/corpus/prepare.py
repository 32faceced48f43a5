"""NLM's PubMed XML files in, a prepared corpus out (:mod:`bioptimus_hf.utils.prepared_corpus`): ``prepare_corpus``.

Update semantics equal to applying the files one after another in the order of their names, computed in parallel:

1. **parse** (parallel, one task per input file): the file's records, in document order, go to
   ``DIR/.prepare/<stem>.parquet`` (citations and deletions alike), then ``<stem>.json`` with its counts, its
   checksum and its errors. The report is written last: a file is parsed when its report exists and names the
   input's size and modification time (a rerun skips it).
2. **merge** (main process): the PMIDs of every parsed file, in name order, as one sequence of events. A citation
   record is *current* when it is its PMID's last event, *replaced* when a later record of that PMID follows it,
   *deleted* when only ``DeleteCitation`` events follow. This is what the sequential application gives, whatever
   order the files were parsed in; the merge holds a few integers (~40 bytes) per record of the corpus.
3. **write** (parallel, one task per input file): each file's current citations, less those the filters leave out
   (no abstract, language, too short; counted by reason), in a seeded random order, as ``DIR/<stem>.parquet``. A
   shard is written under a temporary name and renamed when complete; its metadata holds a key of everything it
   depends on (the input's checksum, the rows kept, the settings), so a rerun skips a shard whose key is unchanged.
4. ``manifest.json`` last (removed when a run starts): the shards with their rows and sha256, the inputs with
   theirs, the counts (``citations_read = written + replaced + deleted + filtered``, checked) and every error with
   its file and position. An interrupted run leaves no manifest, and no file under a shard's name that is not a
   complete shard.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from ..utils.files import read_json, write_json_atomic
from ..utils.prepared_corpus import MANIFEST_FORMAT, MANIFEST_NAME, SHARD_SUFFIX, TEXT_COLUMN
from ..utils.progress import progress_bar
from ..vocabulary.qikfind import split_sentences
from .prepare_config import FILTER_REASONS, PrepareCorpusArguments
from .pubmed_xml import Citation, FileReading, Malformed, PubmedFileError, read_pubmed_file


logger = logging.getLogger(__name__)

WORK_DIR_NAME = ".prepare"
CITATION, DELETION = 0, 1
# Parse results of this layout are reused by a rerun; another layout is parsed again.
PARSE_FORMAT = 1
SHARD_METADATA_KEY = b"bioptimus_prepare"
_WRITE_BATCH = 4096
_ROW_GROUP = 8192
_XML_SUFFIXES = (".xml.gz", ".xml")


class PrepareCorpusError(ValueError):
    """Input that prepare-corpus refuses (a malformed record or broken file with ``--on_error fail``, bad names)."""


def input_stem(path: str | os.PathLike) -> str:
    name = Path(path).name
    for suffix in _XML_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def ordered_inputs(files: list[str]) -> list[Path]:
    """The input files in the order of their names (NLM's numbering), each checked; equal names are refused."""
    paths = sorted((Path(f) for f in files), key=lambda p: p.name)
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(
                f"--input_files: {path} does not exist" if not path.exists() else f"{path} is not a file"
            )
        if not path.name.endswith(_XML_SUFFIXES):
            raise PrepareCorpusError(f"--input_files: {path} is not a PubMed XML file (.xml.gz or .xml)")
    stems = [input_stem(p) for p in paths]
    repeated = sorted({s for s in stems if stems.count(s) > 1})
    if repeated:
        raise PrepareCorpusError(f"--input_files: several files named {repeated[0]} (each input once)")
    return paths


# --------------------------------------------------------------------------------------------------
# 1. parse


def _intermediate_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("kind", pa.int8()),
            ("pmid", pa.int64()),
            ("version", pa.int32()),
            ("title", pa.string()),
            ("abstract", pa.string()),
            ("languages", pa.string()),
            ("year", pa.int32()),
            ("record", pa.int64()),
        ]
    )


def _input_identity(path: Path) -> dict:
    stat = path.stat()
    return {"input": path.name, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _parse_settings(args: PrepareCorpusArguments) -> dict:
    return {"format": PARSE_FORMAT, "section_labels": args.section_labels}


def parse_file(path: str, work_dir: str, settings: dict, fail_on_error: bool, on_bytes=None) -> dict:
    """Parse one input into ``<work_dir>/<stem>.parquet`` and write its report ``<stem>.json`` (returned)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, work = Path(path), Path(work_dir)
    stem = input_stem(path)
    target = work / f"{stem}.parquet"
    temporary = work / f".{stem}.parquet.partial"
    schema = _intermediate_schema()
    columns: dict[str, list] = {name: [] for name in schema.names}
    counts = {"records": 0, "citations": 0, "deletions": 0}
    malformed, broken = [], None
    reading = FileReading()

    def flush(writer):
        writer.write_table(pa.table(columns, schema=schema))
        for values in columns.values():
            values.clear()

    writer = pq.ParquetWriter(temporary, schema, compression="zstd")
    try:
        try:
            for item in read_pubmed_file(
                path, section_labels=settings["section_labels"], on_bytes=on_bytes, reading=reading
            ):
                if isinstance(item, Malformed):
                    if fail_on_error:
                        raise PrepareCorpusError(
                            f"{path}: {item.position()}: {item.reason} (--on_error skip skips it)"
                        )
                    malformed.append({"position": item.position(), "error": item.reason})
                    continue
                counts["records"] += 1
                is_citation = isinstance(item, Citation)
                counts["citations" if is_citation else "deletions"] += 1
                columns["kind"].append(CITATION if is_citation else DELETION)
                columns["pmid"].append(item.pmid)
                columns["version"].append(item.version)
                columns["title"].append(item.title if is_citation else None)
                columns["abstract"].append(item.abstract if is_citation else None)
                columns["languages"].append(";".join(item.languages) if is_citation else None)
                columns["year"].append(item.year if is_citation else None)
                columns["record"].append(item.record)
                if len(columns["pmid"]) >= _WRITE_BATCH:
                    flush(writer)
        except PubmedFileError as error:
            if fail_on_error:
                raise PrepareCorpusError(f"{error} (--on_error skip keeps the records before it)") from None
            broken = {"position": error.position, "error": error.reason}
        flush(writer)
        writer.close()
    except BaseException:
        writer.close()
        temporary.unlink(missing_ok=True)
        raise
    _fsync(temporary)
    os.replace(temporary, target)
    report = {
        **_input_identity(path),
        "settings": settings,
        "sha256": reading.sha256 if not broken else _checksum(path)["sha256"],  # of the whole file
        "bytes_read": reading.bytes,
        **counts,
        "malformed": malformed,
        "broken": broken,
    }
    write_json_atomic(work / f"{stem}.json", report)
    return report


def _parsed_report(path: Path, work: Path, settings: dict) -> dict | None:
    """The report of an earlier parse of this very file with these settings, or None (parse it)."""
    stem = input_stem(path)
    report_path, data_path = work / f"{stem}.json", work / f"{stem}.parquet"
    if not report_path.is_file() or not data_path.is_file():
        return None
    try:
        report = read_json(report_path)
    except ValueError:
        return None
    identity = _input_identity(path)
    if any(report.get(key) != value for key, value in identity.items()) or report.get("settings") != settings:
        return None
    return report


# --------------------------------------------------------------------------------------------------
# 2. merge


def merge_events(pmid_columns: list[np.ndarray], kind_columns: list[np.ndarray]) -> tuple[list[np.ndarray], dict]:
    """Which citation rows of each file are current after applying the files in this order, and the counts.

    Returns (for each file, the indices of its current citation rows; counts ``replaced``, ``deleted``,
    ``current``, ``deletions_without_citation``)."""
    sizes = [len(p) for p in pmid_columns]
    if sum(sizes) == 0:
        return [np.zeros(0, dtype=np.int64) for _ in sizes], {
            "current": 0,
            "replaced": 0,
            "deleted": 0,
            "deletions_without_citation": 0,
        }
    pmid = np.concatenate(pmid_columns)
    citation = np.concatenate(kind_columns) == CITATION
    position = np.arange(len(pmid), dtype=np.int64)
    order = np.argsort(pmid, kind="stable")  # by PMID, each PMID's events in the order applied
    sorted_pmid = pmid[order]
    starts = np.flatnonzero(np.r_[True, sorted_pmid[1:] != sorted_pmid[:-1]])
    ends = np.r_[starts[1:], len(order)]
    last_event = order[ends - 1]
    last_citation = np.maximum.reduceat(np.where(citation[order], order, -1), starts)
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.repeat(np.arange(len(starts)), ends - starts)
    is_last_citation = citation & (last_citation[group] == position)
    current = is_last_citation & (last_event[group] == position)
    counts = {
        "current": int(current.sum()),
        "replaced": int((citation & ~is_last_citation).sum()),
        "deleted": int((is_last_citation & ~current).sum()),
        "deletions_without_citation": int((~citation & (last_citation[group] < 0)).sum()),
    }
    offsets = np.r_[0, np.cumsum(sizes)]
    kept = [np.flatnonzero(current[offsets[i] : offsets[i + 1]]) for i in range(len(sizes))]
    return kept, counts


# --------------------------------------------------------------------------------------------------
# 3. write


def _shard_settings(args: PrepareCorpusArguments) -> dict:
    return {
        "text_unit": args.text_unit,
        "require_abstract": args.require_abstract,
        "min_abstract_chars": args.min_abstract_chars,
        "languages": sorted(args.languages) if args.languages else None,
        "section_labels": args.section_labels,
        "shuffle_rows": args.shuffle_rows,
        "seed": args.seed,
    }


def shard_key(input_sha256: str, rows: np.ndarray, settings: dict) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(rows, dtype=np.int64).tobytes()).hexdigest()
    text = json.dumps({"format": MANIFEST_FORMAT, "input": input_sha256, "rows": digest, **settings}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _filter_reason(title: str, abstract: str, languages: str, settings: dict) -> str | None:
    if settings["require_abstract"] and not abstract:
        return "no_abstract"
    if settings["languages"] and not set(languages.split(";")) & set(settings["languages"]):
        return "language"
    if len(abstract) < settings["min_abstract_chars"]:
        return "too_short"
    return None


def _shard_schema(sentences: bool):
    import pyarrow as pa

    fields = [("pmid", pa.int64()), ("version", pa.int32()), ("year", pa.int32()), ("language", pa.string())]
    if sentences:
        fields.append(("sentence", pa.int32()))
    return pa.schema([*fields, (TEXT_COLUMN, pa.string())])


def write_shard(intermediate: str, rows: np.ndarray, target: str, settings: dict, key: str) -> dict:
    """Write one shard of the current citations ``rows`` of a parsed file; returns its entry and filtered counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = Path(target)
    parsed = pq.read_table(intermediate).take(pa.array(rows, type=pa.int64())).to_pydict()
    filtered = dict.fromkeys(FILTER_REASONS, 0)
    kept = []
    for i, (title, abstract, languages) in enumerate(zip(parsed["title"], parsed["abstract"], parsed["languages"])):
        reason = _filter_reason(title or "", abstract or "", languages or "", settings)
        if reason is None:
            kept.append(i)
        else:
            filtered[reason] += 1
    if settings["shuffle_rows"]:
        generator = np.random.default_rng([settings["seed"], zlib.crc32(target.name.encode())])
        kept = [kept[i] for i in generator.permutation(len(kept))]
    sentences = settings["text_unit"] == "sentence"
    out: dict[str, list] = {name: [] for name in _shard_schema(sentences).names}
    for i in kept:
        text = f"{parsed['title'][i] or ''} {parsed['abstract'][i] or ''}".strip()
        units = split_sentences(text)[0] if sentences else [text]
        for index, unit in enumerate(units):
            out["pmid"].append(parsed["pmid"][i])
            out["version"].append(parsed["version"][i])
            out["year"].append(parsed["year"][i])
            out["language"].append(parsed["languages"][i])
            if sentences:
                out["sentence"].append(index)
            out[TEXT_COLUMN].append(unit)
    entry = {"file": target.name, "rows": len(out[TEXT_COLUMN]), "citations": len(kept)}
    if not kept:
        target.unlink(missing_ok=True)  # an earlier preparation's shard of this input is no longer part of it
        return {**entry, "key": key, "filtered": filtered}
    metadata = {SHARD_METADATA_KEY: json.dumps({**entry, "key": key, "filtered": filtered}).encode()}
    table = pa.table(out, schema=_shard_schema(sentences).with_metadata(metadata))
    temporary = target.with_name(f".{target.name}.partial")
    try:
        pq.write_table(table, temporary, compression="zstd", row_group_size=_ROW_GROUP)
        _fsync(temporary)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return {**entry, "key": key, "filtered": filtered, **_checksum(target)}


def finished_shard(target: Path, key: str) -> dict | None:
    """The entry of a complete shard already written with this key (a rerun skips it), else None."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not target.is_file():
        return None
    try:
        stored = (pq.read_schema(target).metadata or {}).get(SHARD_METADATA_KEY)
    except (pa.ArrowException, OSError):
        return None
    entry = json.loads(stored) if stored else {}
    if entry.get("key") != key:
        return None
    return {**entry, **_checksum(target)}


def _checksum(path: Path) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


# --------------------------------------------------------------------------------------------------
# the whole preparation


def _remove_temporaries(directory: Path) -> None:
    for stale in directory.glob(".*.partial"):
        stale.unlink(missing_ok=True)


def _run_tasks(function, tasks: list[tuple], workers: int, on_done) -> list:
    """``function(*task)`` for each task, in ``workers`` processes (in this one for 1); results in task order."""
    results: list = [None] * len(tasks)
    if workers <= 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            results[i] = function(*task)
            on_done(i, results[i])
        return results
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(function, *task): i for i, task in enumerate(tasks)}
        try:
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                on_done(i, results[i])
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results


def prepare_corpus(args: PrepareCorpusArguments) -> dict:
    """Prepare ``args.output_dir`` from ``args.input_files`` (module docstring); returns the manifest."""
    import pyarrow.parquet as pq

    inputs = ordered_inputs(args.input_files)
    output = Path(args.output_dir)
    work = output / WORK_DIR_NAME
    work.mkdir(parents=True, exist_ok=True)
    (output / MANIFEST_NAME).unlink(missing_ok=True)  # the directory is unfinished until the new one is written
    _remove_temporaries(output)
    _remove_temporaries(work)
    workers = args.num_workers or os.cpu_count() or 1
    fail = args.on_error == "fail"

    # 1. parse every input not parsed before with these settings
    parse_settings = _parse_settings(args)
    reports: list[dict | None] = [_parsed_report(p, work, parse_settings) for p in inputs]
    todo = [i for i, report in enumerate(reports) if report is None]
    bar = progress_bar(
        total=sum(inputs[i].stat().st_size for i in todo),
        unit="B",
        unit_scale=True,
        desc="parsing PubMed XML",
        enabled=not args.disable_tqdm,
    )
    with bar:
        serial = workers <= 1 or len(todo) <= 1
        extra = (bar.update,) if serial else ()  # in this process the bar follows the bytes; else the files

        def parsed(j, report):
            if not serial:
                bar.update(inputs[todo[j]].stat().st_size)

        tasks = [(str(inputs[i]), str(work), parse_settings, fail, *extra) for i in todo]
        done = _run_tasks(parse_file, tasks, workers, parsed)
        for i, report in zip(todo, done):
            reports[i] = report
        logger.info("parsed %d file(s), %d reused from %s", len(todo), len(inputs) - len(todo), work)

        # 2. merge: which citations are current after applying the files in name order
        intermediates = [work / f"{input_stem(p)}.parquet" for p in inputs]
        pmids, kinds = [], []
        for path in intermediates:
            table = pq.read_table(path, columns=["pmid", "kind"])
            pmids.append(table.column("pmid").to_numpy().astype(np.int64, copy=False))
            kinds.append(table.column("kind").to_numpy())
        kept, merged = merge_events(pmids, kinds)
        del pmids, kinds

        # 3. write each input's shard, unless an identical one is there
        settings = _shard_settings(args)
        keys = [shard_key(report["sha256"], rows, settings) for report, rows in zip(reports, kept)]
        targets = [output / f"{input_stem(p)}{SHARD_SUFFIX}" for p in inputs]
        entries: list[dict | None] = [finished_shard(t, k) for t, k in zip(targets, keys)]
        todo = [i for i, entry in enumerate(entries) if entry is None]
        bar.unit, bar.unit_scale = "shard", False
        bar.reset(total=len(inputs))
        bar.set_description("writing shards")
        bar.update(len(inputs) - len(todo))
        written = _run_tasks(
            write_shard,
            [(str(intermediates[i]), kept[i], str(targets[i]), settings, keys[i]) for i in todo],
            workers,
            lambda j, entry: bar.update(1),
        )
        for i, entry in zip(todo, written):
            entries[i] = entry
    logger.info("wrote %d shard(s), %d unchanged", len(todo), len(inputs) - len(todo))

    manifest = build_manifest(args, inputs, reports, entries, merged)
    write_json_atomic(output / MANIFEST_NAME, manifest)
    if not args.keep_intermediate:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def build_manifest(args, inputs: list[Path], reports: list[dict], entries: list[dict], merged: dict) -> dict:
    filtered = {reason: sum(e["filtered"][reason] for e in entries) for reason in FILTER_REASONS}
    written = sum(e["citations"] for e in entries)
    counts = {
        "files": len(inputs),
        "citations_read": sum(r["citations"] for r in reports),
        "written": written,
        "replaced": merged["replaced"],
        "deleted": merged["deleted"],
        "filtered": filtered,
        "malformed": sum(len(r["malformed"]) for r in reports),
        "broken_files": sum(1 for r in reports if r["broken"]),
        "deletions_read": sum(r["deletions"] for r in reports),
        "deletions_without_citation": merged["deletions_without_citation"],
        "rows": sum(e["rows"] for e in entries),
    }
    accounted = written + counts["replaced"] + counts["deleted"] + sum(filtered.values())
    if accounted != counts["citations_read"]:  # a bug, never the input's fault
        raise RuntimeError(f"prepare-corpus: counts do not reconcile ({counts})")
    errors = []
    for path, report in zip(inputs, reports):
        errors += [{"file": path.name, **m, "action": "skipped"} for m in report["malformed"]]
        if report["broken"]:
            errors.append({"file": path.name, **report["broken"], "action": "kept the records before it"})
    for error in errors:
        logger.warning(
            "prepare-corpus: %s: %s: %s (%s)", error["file"], error["position"], error["error"], error["action"]
        )
    return {
        "format": MANIFEST_FORMAT,
        "settings": _shard_settings(args),
        "counts": counts,
        "inputs": [
            {
                "file": path.name,
                "bytes": r["size"],
                "sha256": r["sha256"],
                "citations": r["citations"],
                "deletions": r["deletions"],
                "malformed": len(r["malformed"]),
                "broken": bool(r["broken"]),
            }
            for path, r in zip(inputs, reports)
        ],
        "shards": [
            {k: e[k] for k in ("file", "rows", "citations", "bytes", "sha256")} | {"input": path.name}
            for path, e in zip(inputs, entries)
            if e["citations"]
        ],
        "errors": errors,
    }
