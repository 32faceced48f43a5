"""NLM's PubMed XML files in, a prepared corpus out (:mod:`bioptimus_hf.utils.prepared_corpus`): ``prepare_corpus``,
for ``bioptimus prepare-corpus``. The result equals applying the files one after another in name order, computed in
parallel: **parse** each file (a rerun skips it), **merge** every PMID (current, replaced or deleted), **write** each
file's current citations as ``DIR/<stem>.parquet`` (skipped when unchanged), then ``manifest.json`` with the counts."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

from ..utils.errors import BadInput
from ..utils.files import read_json, write_json_atomic
from ..utils.prepared_corpus import MANIFEST_FORMAT, MANIFEST_NAME, SHARD_SUFFIX, TEXT_COLUMN
from ..utils.progress import progress_bar
from ..vocabulary.qikfind import split_sentences
from .prepare_config import FILTER_REASONS, PrepareCorpusArguments
from .pubmed_xml import Citation, FileReading, Malformed, PubmedFileError, read_pubmed_file
from .tasks import run_tasks


logger = logging.getLogger(__name__)

WORK_DIR_NAME = ".prepare"
CITATION, DELETION = 0, 1
# Parse results of this layout are reused by a rerun; another layout is parsed again.
PARSE_FORMAT = 2
INTERMEDIATE_SUFFIX = ".arrow"
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
            what = "does not exist" if not path.exists() else "is not a file (give the XML files, not a folder)"
            raise FileNotFoundError(f"--input_files: {path} {what}")
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


def _intermediate_path(work: Path, stem: str) -> Path:
    return work / f"{stem}{INTERMEDIATE_SUFFIX}"


class _Columns:
    """The parsed records of one file, appended as they come and written to an Arrow IPC file in batches."""

    def __init__(self, temporary: Path):
        import pyarrow as pa

        self.pa = pa
        self.schema = _intermediate_schema()
        self.values: dict[str, list] = {name: [] for name in self.schema.names}
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        self.writer = pa.ipc.new_file(str(temporary), self.schema, options=options)

    def add(self, item) -> None:
        values, citation = self.values, isinstance(item, Citation)
        values["kind"].append(CITATION if citation else DELETION)
        values["pmid"].append(item.pmid)
        values["version"].append(item.version)
        values["title"].append(item.title if citation else None)
        values["abstract"].append(item.abstract if citation else None)
        values["languages"].append(";".join(item.languages) if citation else None)
        values["year"].append(item.year if citation else None)
        values["record"].append(item.record)
        if len(values["pmid"]) >= _WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        self.writer.write_table(self.pa.table(self.values, schema=self.schema))
        for values in self.values.values():
            values.clear()

    def close(self) -> None:
        self.flush()
        self.writer.close()


def _read_records(path: Path, settings: dict, fail_on_error: bool, on_bytes, columns: _Columns) -> dict:
    """Read ``path`` into ``columns``; the counts, the malformed records and the break (None if the file is whole)."""
    counts = {"records": 0, "citations": 0, "deletions": 0}
    malformed, broken, reading = [], None, FileReading()
    try:
        for item in read_pubmed_file(
            path, section_labels=settings["section_labels"], on_bytes=on_bytes, reading=reading
        ):
            if isinstance(item, Malformed):
                if fail_on_error:
                    raise PrepareCorpusError(f"{path}: {item.position()}: {item.reason} (--on_error skip skips it)")
                malformed.append({"position": item.position(), "error": item.reason})
                continue
            counts["records"] += 1
            counts["citations" if isinstance(item, Citation) else "deletions"] += 1
            columns.add(item)
    except PubmedFileError as error:
        if fail_on_error:
            raise PrepareCorpusError(f"{error} (--on_error skip keeps the records before it)") from None
        broken = {"position": error.position, "error": error.reason}
    sha256 = reading.sha256 if not broken else _checksum(path)["sha256"]  # of the whole file
    return {"sha256": sha256, "bytes_read": reading.bytes, **counts, "malformed": malformed, "broken": broken}


def parse_file(path: str, work_dir: str, settings: dict, fail_on_error: bool, on_bytes=None) -> dict:
    """Parse one input into ``<work_dir>/<stem>.arrow`` and write its report ``<stem>.json`` (returned)."""
    path, work = Path(path), Path(work_dir)
    stem = input_stem(path)
    target = _intermediate_path(work, stem)
    temporary = work / f".{target.name}.partial"
    columns = _Columns(temporary)
    try:
        found = _read_records(path, settings, fail_on_error, on_bytes, columns)
        columns.close()
    except BaseException:
        columns.writer.close()
        temporary.unlink(missing_ok=True)
        raise
    _fsync(temporary)
    os.replace(temporary, target)
    report = {**_input_identity(path), "settings": settings, **found}
    write_json_atomic(work / f"{stem}.json", report)
    return report


def read_intermediate(path: Path, columns: list[str] | None = None):
    """A parsed file's records (an Arrow table, memory-mapped)."""
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    return table.select(columns) if columns else table


def _parsed_report(path: Path, work: Path, settings: dict) -> dict | None:
    """The report of an earlier parse of this very file with these settings, or None (parse it)."""
    stem = input_stem(path)
    report_path, data_path = work / f"{stem}.json", _intermediate_path(work, stem)
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
        counts = dict.fromkeys(("current", "replaced", "deleted", "deletions_without_citation"), 0)
        return [np.zeros(0, dtype=np.int64) for _ in sizes], counts
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


def _kept_rows(table, settings: dict) -> tuple[np.ndarray, dict]:
    """Which rows of ``table`` (current citations) the filters keep, and how many each reason left out (a row is
    counted under the first reason that applies, in :data:`FILTER_REASONS`' order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    abstract = table.column("abstract").fill_null("")
    reasons = {}
    if settings["require_abstract"]:
        reasons["no_abstract"] = pc.equal(abstract, "").to_numpy(zero_copy_only=False)
    if settings["languages"]:
        split = pc.split_pattern(table.column("languages").fill_null("").combine_chunks(), ";")
        hit = pc.is_in(pc.list_flatten(split), value_set=pa.array(settings["languages"])).to_numpy(
            zero_copy_only=False
        )
        matched = np.zeros(len(table), dtype=bool)
        matched[pc.list_parent_indices(split).to_numpy()[hit]] = True
        reasons["language"] = ~matched
    if settings["min_abstract_chars"]:
        short = pc.less(pc.utf8_length(abstract), settings["min_abstract_chars"])
        reasons["too_short"] = short.to_numpy(zero_copy_only=False)
    left_out = np.zeros(len(table), dtype=bool)
    filtered = dict.fromkeys(FILTER_REASONS, 0)
    for reason in FILTER_REASONS:
        if reason in reasons:
            filtered[reason] = int((reasons[reason] & ~left_out).sum())
            left_out |= reasons[reason]
    return np.flatnonzero(~left_out), filtered


def _text(table):
    """The title, then the abstract, one space between (either alone when the other is empty)."""
    import pyarrow.compute as pc

    title, abstract = table.column("title").fill_null(""), table.column("abstract").fill_null("")
    joined = pc.binary_join_element_wise(title, abstract, " ")
    return pc.if_else(pc.equal(title, ""), abstract, pc.if_else(pc.equal(abstract, ""), title, joined))


def _shard_schema(sentences: bool):
    import pyarrow as pa

    fields = [("pmid", pa.int64()), ("version", pa.int32()), ("year", pa.int32()), ("language", pa.string())]
    if sentences:
        fields.append(("sentence", pa.int32()))
    return pa.schema([*fields, (TEXT_COLUMN, pa.string())])


def _shard_table(parsed, kept: np.ndarray, sentences: bool):
    """The shard's columns: the citations ``kept`` of ``parsed``, in that order (a row per sentence for the sentence
    unit). The text is joined first and then taken with the rest, in one pass over each column."""
    import pyarrow as pa

    order = pa.array(kept, type=pa.int64())
    columns = {
        "pmid": parsed.column("pmid").take(order),
        "version": parsed.column("version").take(order),
        "year": parsed.column("year").take(order),
        "language": parsed.column("languages").take(order),
        TEXT_COLUMN: _text(parsed).take(order),
    }
    if not sentences:
        return pa.table(columns)
    repeat, index, units = [], [], []
    for row, text in enumerate(columns[TEXT_COLUMN].to_pylist()):
        found = split_sentences(text)[0]
        repeat += [row] * len(found)
        index += range(len(found))
        units += found
    take = pa.array(repeat, type=pa.int64())
    table = {name: columns[name].take(take) for name in ("pmid", "version", "year", "language")}
    return pa.table({**table, "sentence": pa.array(index, type=pa.int32()), TEXT_COLUMN: pa.array(units, pa.string())})


def write_shard(intermediate: str, rows: np.ndarray, target: str, settings: dict, key: str) -> dict:
    """Write one shard of the current citations ``rows`` of a parsed file; returns its entry and filtered counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = Path(target)
    parsed = read_intermediate(Path(intermediate))
    if len(rows) != parsed.num_rows or not np.array_equal(rows, np.arange(len(rows))):  # not every row current
        parsed = parsed.take(pa.array(rows, type=pa.int64()))
    kept, filtered = _kept_rows(parsed, settings)
    if settings["shuffle_rows"]:
        generator = np.random.default_rng([settings["seed"], zlib.crc32(target.name.encode())])
        kept = kept[generator.permutation(len(kept))]
    sentences = settings["text_unit"] == "sentence"
    table = _shard_table(parsed, kept, sentences)
    entry = {"file": target.name, "rows": table.num_rows, "citations": len(kept)}
    if not len(kept):
        target.unlink(missing_ok=True)  # an earlier preparation's shard of this input is no longer part of it
        return {**entry, "key": key, "filtered": filtered}
    metadata = {SHARD_METADATA_KEY: json.dumps({**entry, "key": key, "filtered": filtered}).encode()}
    table = table.cast(_shard_schema(sentences)).replace_schema_metadata(metadata)
    temporary = target.with_name(f".{target.name}.partial")
    try:
        pq.write_table(table, temporary, compression="zstd", row_group_size=_ROW_GROUP)
        _fsync(temporary)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return {**entry, "key": key, "filtered": filtered, **_checksum(target)}


def _shard_entry(path: Path) -> dict | None:
    """The entry a preparation wrote into a shard's metadata; None for a file that is not such a shard."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        stored = (pq.read_schema(path).metadata or {}).get(SHARD_METADATA_KEY)
    except (pa.ArrowException, OSError):
        return None
    return json.loads(stored) if stored else None


def finished_shard(target: Path, key: str) -> dict | None:
    """The entry of a complete shard already written with this key (a rerun skips it), else None."""
    entry = _shard_entry(target) if target.is_file() else None
    if entry is None or entry.get("key") != key:
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


def _parse_inputs(args, inputs: list[Path], work: Path, workers: int) -> list[dict]:
    """Step 1: each input's parse report, parsing those not parsed before with these settings."""
    settings = _parse_settings(args)
    reports: list[dict | None] = [_parsed_report(p, work, settings) for p in inputs]
    todo = [i for i, report in enumerate(reports) if report is None]
    serial = workers <= 1 or len(todo) <= 1
    bar = progress_bar(
        total=sum(inputs[i].stat().st_size for i in todo),
        unit="B",
        unit_scale=True,
        desc="parsing PubMed XML (compressed bytes)",
        enabled=not args.disable_tqdm,
    )
    with bar:
        extra = (bar.update,) if serial else ()  # in this process the bar follows the bytes; else the files

        def parsed(j, report):
            if not serial:
                bar.update(inputs[todo[j]].stat().st_size)

        tasks = [(str(inputs[i]), str(work), settings, args.on_error == "fail", *extra) for i in todo]
        for i, report in zip(todo, run_tasks(parse_file, tasks, workers, parsed)):
            reports[i] = report
    logger.info("parsed %d file(s), %d reused from %s", len(todo), len(inputs) - len(todo), work)
    return reports


def _merge(inputs: list[Path], work: Path) -> tuple[list[np.ndarray], dict]:
    """Step 2: which citations are current after applying the files in name order."""
    pmids, kinds = [], []
    for path in inputs:
        table = read_intermediate(_intermediate_path(work, input_stem(path)), ["pmid", "kind"])
        pmids.append(table.column("pmid").to_numpy().astype(np.int64, copy=False))
        kinds.append(table.column("kind").to_numpy())
    return merge_events(pmids, kinds)


def _write_shards(args, inputs, reports, kept, output: Path, work: Path, workers: int) -> list[dict]:
    """Step 3: each input's shard, unless an identical one is there."""
    settings = _shard_settings(args)
    keys = [shard_key(report["sha256"], rows, settings) for report, rows in zip(reports, kept)]
    targets = [output / f"{input_stem(p)}{SHARD_SUFFIX}" for p in inputs]
    entries: list[dict | None] = [finished_shard(t, k) for t, k in zip(targets, keys)]
    todo = [i for i, entry in enumerate(entries) if entry is None]
    with progress_bar(
        total=len(inputs),
        initial=len(inputs) - len(todo),
        unit="shard",
        desc="writing shards",
        enabled=not args.disable_tqdm,
    ) as bar:
        intermediates = [_intermediate_path(work, input_stem(p)) for p in inputs]
        tasks = [(str(intermediates[i]), kept[i], str(targets[i]), settings, keys[i]) for i in todo]
        for i, entry in zip(todo, run_tasks(write_shard, tasks, workers, lambda j, entry: bar.update(1))):
            entries[i] = entry
    logger.info("wrote %d shard(s), %d unchanged", len(todo), len(inputs) - len(todo))
    return entries


def remove_stale_shards(output: Path, shards: list[dict]) -> list[str]:
    """Remove the shards an earlier preparation wrote (its metadata says so) that this manifest does not list (an
    input dropped, or left with no rows): the directory then holds exactly the manifest's shards."""
    listed = {shard["file"] for shard in shards}
    stale = [p for p in output.glob(f"*{SHARD_SUFFIX}") if p.name not in listed and _shard_entry(p) is not None]
    for path in stale:
        path.unlink(missing_ok=True)
    return sorted(p.name for p in stale)


def prepare_corpus(args: PrepareCorpusArguments) -> dict:
    """Prepare ``args.output_dir`` from ``args.input_files`` (module docstring); returns the manifest.

    An interruption (Ctrl-C) or an error stops the workers at once and removes the temporaries before it goes on:
    what is left is complete shards and parsed files, no manifest."""
    inputs = ordered_inputs(args.input_files)
    output = Path(args.output_dir)
    work = output / WORK_DIR_NAME
    work.mkdir(parents=True, exist_ok=True)
    (output / MANIFEST_NAME).unlink(missing_ok=True)  # the directory is unfinished until the new one is written
    workers = args.num_workers or os.cpu_count() or 1
    try:
        _remove_temporaries(output)
        _remove_temporaries(work)
        reports = _parse_inputs(args, inputs, work, workers)
        kept, merged = _merge(inputs, work)
        entries = _write_shards(args, inputs, reports, kept, output, work, workers)
    except BaseException:
        _remove_temporaries(output)
        _remove_temporaries(work)
        raise
    manifest = build_manifest(args, inputs, reports, entries, merged)
    removed = remove_stale_shards(output, manifest["shards"])
    if removed:
        logger.info("removed %d shard(s) of inputs no longer given: %s", len(removed), ", ".join(removed[:5]))
    write_json_atomic(output / MANIFEST_NAME, manifest)
    if not args.keep_intermediate:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def run_prepare_corpus(args: PrepareCorpusArguments) -> dict:
    """``bioptimus prepare-corpus``: prepare, print the counts; lost records are :class:`BadInput` unless
    ``--on_error skip``."""
    manifest = prepare_corpus(args)
    print(json.dumps(manifest["counts"], indent=2), flush=True)
    lost = lost_records_message(manifest)
    if lost and args.on_error == "report":
        raise BadInput(lost)
    return manifest


def lost_records_message(manifest: dict) -> str | None:
    """One line saying how many records a run lost and where (None when it lost none)."""
    counts, errors = manifest["counts"], manifest["errors"]
    if not errors:
        return None
    files = sorted({error["file"] for error in errors})
    where = "; ".join(f"{e['file']} {e['position']}" for e in errors[:5]) + (
        f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
    )
    return (
        f"records lost: {counts['malformed']} malformed record(s) skipped, {counts['broken_files']} file(s) cut short "
        f"(the records after the break unread), in {', '.join(files[:5])}{' ...' if len(files) > 5 else ''}: "
        f"{where}; the corpus holds the rest (manifest.json lists each; --on_error skip accepts this, --on_error fail "
        "refuses it)"
    )


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
