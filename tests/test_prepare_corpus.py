"""bioptimus prepare-corpus on NLM-style PubMed files: each current PMID once with its text, update semantics by file
name, counts that reconcile, errors with file and position, filters and text units, parallel = serial, reruns that
skip finished work, interruptions that never leave a shard looking finished, memory flat in a file's size."""

import hashlib
import json
import shutil
import tracemalloc

import numpy as np
import pyarrow.parquet as pq
import pytest

from bioptimus_hf.commands import main as bioptimus
from bioptimus_hf.corpus import prepare as prepare_module
from bioptimus_hf.corpus import pubmed_xml
from bioptimus_hf.corpus.prepare import merge_events, prepare_corpus
from bioptimus_hf.corpus.prepare_config import PrepareCorpusArguments
from bioptimus_hf.corpus.pubmed_xml import Citation, read_pubmed_file
from bioptimus_hf.testing.pubmed_files import Record, pubmed_document, write_pubmed_file
from bioptimus_hf.utils.corpus_reader import CorpusFileError, check_corpus_files, iter_lines
from bioptimus_hf.utils.prepared_corpus import MANIFEST_NAME, PreparedCorpusError, shard_paths
from helpers.pubmed import EXPECTED_TEXTS, EXPECTED_YEARS, TRUNCATED, write_pubmed_fixtures


def prepare(tmp_path, inputs, name="out", **settings):
    settings = {"num_workers": 1, "disable_tqdm": True, **settings}
    args = PrepareCorpusArguments(input_files=[str(p) for p in inputs], output_dir=str(tmp_path / name), **settings)
    return prepare_corpus(args)


def rows(directory):
    found = []
    for path in shard_paths(directory):
        found += pq.read_table(path).to_pylist()
    return found


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def inputs(tmp_path):
    return write_pubmed_fixtures(tmp_path / "pubmed")


def test_each_current_pmid_is_written_once_with_its_text_and_the_counts_reconcile(tmp_path, inputs):
    manifest = prepare(tmp_path, inputs)
    out = tmp_path / "out"
    truncated = next(entry for entry in manifest["inputs"] if entry["file"] == "pubmed25n0004.xml.gz")
    kept_before_the_break = truncated["citations"]
    assert 0 < kept_before_the_break < len(TRUNCATED) and truncated["broken"]

    found = rows(out)
    pmids = [row["pmid"] for row in found]
    assert len(pmids) == len(set(pmids))  # each PMID once
    expected = dict(EXPECTED_TEXTS)
    expected.update(
        {
            r.pmid: f"Record {r.pmid}. " + " ".join([f"Abstract of record {r.pmid}."] * 20)
            for r in TRUNCATED[:kept_before_the_break]
        }
    )
    assert {row["pmid"]: row["text"] for row in found} == expected
    assert {row["pmid"]: row["year"] for row in found if row["pmid"] in EXPECTED_YEARS} == EXPECTED_YEARS
    assert {row["pmid"]: row["version"] for row in found}[8] == 2
    assert {row["pmid"]: row["language"] for row in found}[7] == "eng;ger"

    counts = manifest["counts"]
    read = 6 + 4 + 2 + kept_before_the_break  # the malformed record is not a citation read
    assert counts == {
        "files": 4,
        "citations_read": read,
        "written": len(expected),
        "replaced": 2,  # PMID 5 and 8's baseline records
        "deleted": 1,  # PMID 6
        "filtered": {"no_abstract": 1, "language": 0, "too_short": 0},  # PMID 3
        "malformed": 1,
        "broken_files": 1,
        "deletions_read": 2,
        "deletions_without_citation": 1,  # PMID 999
        "rows": len(expected),
    }
    assert counts["written"] + counts["replaced"] + counts["deleted"] + sum(counts["filtered"].values()) == read
    assert [e["file"] for e in manifest["inputs"]] == [
        f"pubmed25n000{i}.xml{'.gz' if i != 2 else ''}" for i in (1, 2, 3, 4)
    ]
    assert manifest["errors"] == [
        {
            "file": "pubmed25n0001.xml.gz",
            "position": "record 7",
            "error": "PubmedArticle: PMID 'abc' is not a number",
            "action": "skipped",
        },
        {
            "file": "pubmed25n0004.xml.gz",
            "position": f"after record {kept_before_the_break}",
            "error": manifest["errors"][1]["error"],
            "action": "kept the records before it",
        },
    ]
    assert "truncated gzip stream" in manifest["errors"][1]["error"]
    for shard in manifest["shards"]:
        assert (
            shard["sha256"] == sha256(out / shard["file"]) and shard["bytes"] == (out / shard["file"]).stat().st_size
        )
    for entry, path in zip(manifest["inputs"], sorted(inputs, key=lambda p: p.name)):
        assert entry["sha256"] == sha256(path)
    assert json.loads((out / MANIFEST_NAME).read_text()) == manifest


def test_the_merge_equals_applying_the_files_one_after_another():
    # Events of three files (0 a record, 1 a deletion): a PMID re-added after its deletion (2) is current again; a
    # deletion of a PMID never seen (4, 5) counts apart; a PMID repeated within one file (3) keeps its last record.
    files = [([1, 2, 3, 3, 6], [0, 0, 0, 0, 0]), ([2, 1, 4], [1, 0, 1]), ([2, 5, 6], [0, 1, 1])]
    kept, counts = merge_events([np.array(p) for p, _ in files], [np.array(k, dtype=np.int8) for _, k in files])
    state = {}
    for index, (pmids, kinds) in enumerate(files):
        for row, (pmid, kind) in enumerate(zip(pmids, kinds)):
            if kind == 0:
                state[pmid] = (index, row)
            else:
                state.pop(pmid, None)
    assert sorted((i, int(r)) for i, rows_ in enumerate(kept) for r in rows_) == sorted(state.values())
    assert counts == {"current": 3, "replaced": 3, "deleted": 1, "deletions_without_citation": 2}


def test_files_are_applied_in_name_order_whatever_order_they_are_given(tmp_path, inputs):
    first = prepare(tmp_path, sorted(inputs), name="sorted")
    second = prepare(tmp_path, sorted(inputs, reverse=True), name="reversed")
    assert first["counts"] == second["counts"]
    assert rows(tmp_path / "sorted") == rows(tmp_path / "reversed")


def test_parallel_workers_write_what_one_process_writes(tmp_path, inputs):
    serial = prepare(tmp_path, inputs, name="serial")
    parallel = prepare(tmp_path, inputs, name="parallel", num_workers=2)
    assert parallel["counts"] == serial["counts"] and parallel["errors"] == serial["errors"]
    assert [(s["file"], s["rows"]) for s in parallel["shards"]] == [(s["file"], s["rows"]) for s in serial["shards"]]
    assert rows(tmp_path / "parallel") == rows(tmp_path / "serial")


def test_on_error_fail_refuses_a_malformed_record_or_a_broken_file_naming_it(tmp_path, inputs, capsys):
    base = ["prepare-corpus", "--output_dir", str(tmp_path / "out"), "--on_error", "fail", "--num_workers", "1"]
    baseline = next(p for p in inputs if p.name == "pubmed25n0001.xml.gz")
    with pytest.raises(SystemExit) as refused:
        bioptimus([*base, "--input_files", str(baseline)])
    assert str(refused.value) == (
        f"error: {baseline}: record 7: PubmedArticle: PMID 'abc' is not a number (--on_error skip skips it)"
    )
    truncated = next(p for p in inputs if p.name == "pubmed25n0004.xml.gz")
    with pytest.raises(SystemExit) as refused:
        bioptimus([*base, "--input_files", str(truncated)])
    assert str(refused.value).startswith(f"error: {truncated}: after record ")
    assert "truncated gzip stream" in str(refused.value)
    assert not (tmp_path / "out" / MANIFEST_NAME).exists()


def test_the_command_prints_the_counts_and_refuses_what_is_not_pubmed_xml(tmp_path, inputs, capsys):
    command = ["prepare-corpus", "--input_files", *map(str, inputs), "--output_dir", str(tmp_path / "out")]
    bioptimus([*command, "--num_workers", "1", "--disable_tqdm", "true", "--on_error", "skip"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "out" / MANIFEST_NAME).read_text())["counts"]
    text = tmp_path / "corpus.txt"
    text.write_text("not xml\n")
    with pytest.raises(SystemExit) as refused:
        bioptimus(["prepare-corpus", "--input_files", str(text), "--output_dir", str(tmp_path / "x")])
    assert str(refused.value) == f"error: --input_files: {text} is not a PubMed XML file (.xml.gz or .xml)"
    with pytest.raises(SystemExit) as refused:
        bioptimus(["prepare-corpus", "--input_files", str(tmp_path), "--output_dir", str(tmp_path / "x")])
    assert str(refused.value) == (f"error: --input_files: {tmp_path} is not a file (give the XML files, not a folder)")


def test_filters_and_the_sentence_unit(tmp_path, inputs):
    manifest = prepare(tmp_path, inputs, name="filtered", languages=["eng"], min_abstract_chars=22)
    found = {row["pmid"]: row["text"] for row in rows(tmp_path / "filtered")}
    # French PMID 4 by language; abstracts of 21 (PMID 5), 18 (8) and 14 (9) characters by length
    assert manifest["counts"]["filtered"] == {"no_abstract": 1, "language": 1, "too_short": 3}
    assert {1, 2, 7, 10} <= set(found) and not {3, 4, 5, 8, 9} & set(found)

    manifest = prepare(tmp_path, inputs, name="sentences", text_unit="sentence", section_labels=False)
    sentences = [row for row in rows(tmp_path / "sentences") if row["pmid"] == 7]
    assert [(row["sentence"], row["text"]) for row in sentences] == [
        (0, "Seven."),
        (1, "Abstract seven."),
        (2, "It has two sentences."),
    ]
    first = [row["text"] for row in rows(tmp_path / "sentences") if row["pmid"] == 1]
    assert first[:2] == ["Lactate in sepsis: a cohort.", "Sepsis is common."]  # no section labels
    assert manifest["counts"]["rows"] > manifest["counts"]["written"]


def test_a_rerun_skips_finished_work_and_a_new_update_file_rewrites_only_what_it_changes(tmp_path, inputs):
    out = tmp_path / "out"
    first = prepare(tmp_path, inputs)
    shards = {p.name: p.stat().st_mtime_ns for p in out.glob("*.parquet")}
    parsed = {p.name: p.stat().st_mtime_ns for p in (out / ".prepare").glob("*.json")}
    assert prepare(tmp_path, inputs) == first
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.parquet")} == shards

    update = write_pubmed_file(
        tmp_path / "pubmed" / "pubmed25n0005.xml.gz", [Record(11, "Eleven.", [(None, None, "New.")])], deletions=[9]
    )
    second = prepare(tmp_path, [*inputs, update])
    assert {p.name: p.stat().st_mtime_ns for p in (out / ".prepare").glob("*.json") if p.name in parsed} == parsed
    changed = {p.name for p in out.glob("*.parquet") if shards.get(p.name) != p.stat().st_mtime_ns}
    assert changed == {"pubmed25n0002.parquet", "pubmed25n0005.parquet"}  # PMID 9 deleted from 0002
    texts = {row["pmid"]: row["text"] for row in rows(out)}
    assert 9 not in texts and texts[11] == "Eleven. New."
    assert second["counts"]["deleted"] == first["counts"]["deleted"] + 1


def test_an_interrupted_run_leaves_no_shard_that_looks_finished(tmp_path, inputs, monkeypatch):
    clean = prepare(tmp_path, inputs, name="clean")
    original = prepare_module.write_shard
    calls = []

    def killed_while_writing_the_second_shard(intermediate, rows_, target, settings, key):
        calls.append(target)
        if len(calls) == 2:  # what a SIGKILL during the write leaves: half a file under the temporary name
            partial = tmp_path / "out" / f".{target.rsplit('/', 1)[1]}.partial"
            partial.write_bytes(b"PAR1 half a shard")
            raise KeyboardInterrupt
        return original(intermediate, rows_, target, settings, key)

    monkeypatch.setattr(prepare_module, "write_shard", killed_while_writing_the_second_shard)
    with pytest.raises(KeyboardInterrupt):
        prepare(tmp_path, inputs)
    out = tmp_path / "out"
    assert not (out / MANIFEST_NAME).exists()
    with pytest.raises(PreparedCorpusError, match="without manifest.json: not a finished prepared corpus"):
        check_corpus_files([out])
    for shard in out.glob("*.parquet"):  # every file under a shard's name is a complete shard
        assert pq.read_table(shard).num_rows > 0
    monkeypatch.setattr(prepare_module, "write_shard", original)
    resumed = prepare(tmp_path, inputs)
    assert not list(out.glob(".*.partial"))
    assert resumed["counts"] == clean["counts"]
    assert [s["sha256"] for s in resumed["shards"]] == [s["sha256"] for s in clean["shards"]]


def test_every_stage_reads_the_prepared_corpus_as_lines(tmp_path, inputs):
    manifest = prepare(tmp_path, inputs)
    out = tmp_path / "out"
    texts = [row["text"] for row in rows(out)]
    assert list(iter_lines([out])) == texts
    first = out / manifest["shards"][0]["file"]
    assert list(iter_lines([first])) == texts[: manifest["shards"][0]["rows"]]
    stats = check_corpus_files([out])
    assert stats.nonempty_lines == manifest["counts"]["rows"] and len(stats.files) == len(manifest["shards"])
    (out / "stale.parquet").write_bytes(b"not listed in the manifest")
    assert list(iter_lines([out])) == texts  # only the manifest's shards are the corpus
    shutil.copy(first, tmp_path / "notext.parquet")
    table = pq.read_table(tmp_path / "notext.parquet").drop_columns(["text"])
    pq.write_table(table, tmp_path / "notext.parquet")
    with pytest.raises(CorpusFileError, match="no 'text' column"):
        check_corpus_files([tmp_path / "notext.parquet"])


def test_parsing_memory_stays_flat_in_the_file_size(tmp_path, monkeypatch):
    monkeypatch.setattr(pubmed_xml, "_CHUNK_BYTES", 1 << 14)  # records are parsed a chunk at a time: a small one

    def peak(records):
        path = write_pubmed_file(
            tmp_path / f"pubmed25n{records:04d}.xml.gz",
            [Record(i + 1, f"Title {i}.", [("METHODS", "METHODS", "Words " * 60)]) for i in range(records)],
        )
        tracemalloc.start()
        count = sum(isinstance(item, Citation) for item in read_pubmed_file(path))
        _, high = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert count == records
        return high

    small, large = peak(300), peak(4800)  # 16 times the records
    assert large < 1.5 * small


def test_records_cut_across_chunks_read_as_a_whole_and_a_broken_one_is_located(tmp_path, monkeypatch):
    records = [Record(i, f"Title <i>{i}</i>.", [("AIM", "OBJECTIVE", f"Words {i} " * 30)]) for i in range(1, 60)]
    path = write_pubmed_file(tmp_path / "pubmed25n0001.xml.gz", records, deletions=[3, 4])
    whole = list(read_pubmed_file(path))
    assert len(whole) == 61
    monkeypatch.setattr(pubmed_xml, "_CHUNK_BYTES", 777)  # every record across chunk boundaries
    monkeypatch.setattr(pubmed_xml, "_READ_BYTES", 333)
    assert list(read_pubmed_file(path)) == whole

    lines = pubmed_document(records).splitlines(keepends=True)  # three lines of header, then a record a line
    lines[7] = lines[7].replace("</ArticleTitle>", "</Title>")  # the 5th record's XML is broken
    broken = tmp_path / "pubmed25n0002.xml"
    broken.write_text("".join(lines))
    read = []
    with pytest.raises(pubmed_xml.PubmedFileError) as stopped:
        read.extend(read_pubmed_file(broken))
    assert [item.pmid for item in read] == [1, 2, 3, 4]  # the records before the break are read
    assert stopped.value.position == "after record 4, XML line 8"
    assert "mismatched tag" in stopped.value.reason
