"""bioptimus prepare-corpus as a user and a pipeline meet it: Ctrl-C at any point ends the run, workers included, in
one line and leaves nothing that looks finished (a rerun writes the unbroken run's shards); outputs have the modes
the umask gives; a rerun over fewer inputs leaves exactly the manifest's shards; a run that lost records ends with
status 1 and a last line saying how many and where, unless --on_error skip accepts it."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bioptimus_hf.commands import main as bioptimus
from bioptimus_hf.testing.pubmed_files import Record, write_pubmed_file
from bioptimus_hf.utils.files import write_json_atomic
from bioptimus_hf.utils.prepared_corpus import MANIFEST_NAME


ROOT = Path(__file__).resolve().parents[1]
# How long a signalled run may take to end (the bound), and how long a rerun or its processes may linger.
END_WITHIN_SECONDS = 5.0


def sentence_records(first_pmid: int, count: int, seed: int) -> list[Record]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(500)]

    def text(n):
        return " ".join(words[i] for i in rng.integers(0, len(words), n)) + "."

    return [
        Record(first_pmid + i, text(12), [("METHODS", "METHODS", text(120)), ("RESULTS", "RESULTS", text(120))])
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def pubmed_dir(tmp_path_factory):
    """Four baseline files and an update, large enough that parsing them takes a while (seconds)."""
    directory = tmp_path_factory.mktemp("pubmed")
    for number in range(4):
        write_pubmed_file(
            directory / f"pubmed25n{number + 1:04d}.xml.gz", sentence_records(number * 4000 + 1, 4000, number)
        )
    write_pubmed_file(directory / "pubmed25n0005.xml.gz", sentence_records(10, 200, 9), deletions=[5, 6, 7])
    return directory


def command(inputs: Path, output: Path, *flags: str) -> list[str]:
    files = sorted(str(p) for p in inputs.glob("*.xml.gz"))
    return [sys.executable, "-m", "bioptimus_hf.commands", "prepare-corpus", "--input_files", *files,
            "--output_dir", str(output), "--disable_tqdm", "true", *flags]  # fmt: skip


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def shard_bytes(directory: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.parquet"))}


@pytest.fixture(scope="module")
def unbroken(pubmed_dir, tmp_path_factory):
    output = tmp_path_factory.mktemp("unbroken") / "out"
    subprocess.run(command(pubmed_dir, output, "--num_workers", "2"), env=environment(), check=True, timeout=600)
    return shard_bytes(output)


def phase_reached(output: Path, phase: str) -> bool:
    if phase == "early":  # the command runs (its imports are the dispatcher's concern), nothing parsed yet
        return output.is_dir()
    if phase == "parsing":  # a worker is writing a parsed file
        return bool(list((output / ".prepare").glob(".*.partial")))
    return bool(list(output.glob(".*.partial")) or list(output.glob("*.parquet")))  # writing shards


@pytest.mark.parametrize("phase", ["early", "parsing", "writing"])
def test_ctrl_c_ends_the_run_and_its_workers_at_once_and_a_rerun_finishes_it(phase, pubmed_dir, unbroken, tmp_path):
    output = tmp_path / "out"
    process = subprocess.Popen(
        command(pubmed_dir, output, "--num_workers", "2"),
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the terminal's Ctrl-C signals the whole group
    )
    try:
        deadline = time.monotonic() + 300
        while not phase_reached(output, phase) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert process.poll() is None, f"the run ended before the {phase} phase was reached"
        os.killpg(process.pid, signal.SIGINT)
        signalled = time.monotonic()
        try:
            _, stderr = process.communicate(timeout=END_WITHIN_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {END_WITHIN_SECONDS} s after Ctrl-C ({phase})")
        while group_alive(process.pid) and time.monotonic() < signalled + END_WITHIN_SECONDS:
            time.sleep(0.05)
        assert not group_alive(process.pid), "a worker outlived the run"
    finally:
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    lines = stderr.decode().strip().splitlines()
    assert process.returncode == 130 and lines == ["interrupted"], (process.returncode, lines[-20:])

    assert not (output / MANIFEST_NAME).exists()  # nothing looks finished
    assert not list(output.rglob(".*.partial"))
    for shard in output.glob("*.parquet"):  # a file under a shard's name is a complete shard
        assert pq.read_table(shard).num_rows > 0
    subprocess.run(command(pubmed_dir, output, "--num_workers", "2"), env=environment(), check=True, timeout=600)
    assert shard_bytes(output) == unbroken


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_outputs_have_the_modes_the_umask_gives(umask, tmp_path):
    inputs = [write_pubmed_file(tmp_path / "pubmed25n0001.xml.gz", sentence_records(1, 20, 0))]
    previous = os.umask(umask)
    try:
        write_json_atomic(tmp_path / "record.json", {"a": 1})
        bioptimus(["prepare-corpus", "--input_files", *map(str, inputs), "--output_dir", str(tmp_path / "out"),
                       "--num_workers", "1", "--disable_tqdm", "true"])  # fmt: skip
    finally:
        os.umask(previous)
    expected = 0o666 & ~umask  # what open() gives
    written = [tmp_path / "record.json", tmp_path / "out" / MANIFEST_NAME, *(tmp_path / "out").rglob("*.json"),
               *(tmp_path / "out").glob("*.parquet")]  # fmt: skip
    assert len(written) >= 4
    assert {path.name: oct(path.stat().st_mode & 0o777) for path in written} == {
        path.name: oct(expected) for path in written
    }


def test_a_rerun_over_fewer_inputs_leaves_exactly_the_manifest_shards(tmp_path):
    inputs = [
        write_pubmed_file(tmp_path / f"pubmed25n000{n}.xml.gz", sentence_records(n * 100, 30, n)) for n in (1, 2, 3)
    ]
    out = tmp_path / "out"
    base = ["prepare-corpus", "--output_dir", str(out), "--num_workers", "1", "--disable_tqdm", "true"]
    bioptimus([*base, "--input_files", *map(str, inputs)])
    assert sorted(p.name for p in out.glob("*.parquet")) == [f"pubmed25n000{n}.parquet" for n in (1, 2, 3)]
    pq.write_table(pq.read_table(out / "pubmed25n0001.parquet").replace_schema_metadata({}), out / "mine.parquet")
    bioptimus([*base, "--input_files", str(inputs[0]), str(inputs[2])])
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    listed = sorted(shard["file"] for shard in manifest["shards"])
    assert listed == ["pubmed25n0001.parquet", "pubmed25n0003.parquet"]
    # the dropped input's shard is gone; a Parquet file prepare-corpus did not write is left alone
    assert sorted(p.name for p in out.glob("*.parquet")) == sorted([*listed, "mine.parquet"])


def lost_cases(directory: Path) -> dict[str, tuple[list[Path], str]]:
    directory.mkdir()
    good = write_pubmed_file(directory / "pubmed25n0001.xml.gz", sentence_records(1, 40, 1))
    truncated = write_pubmed_file(directory / "pubmed25n0002.xml.gz", sentence_records(100, 40, 2), truncate_at=0.5)
    broken = write_pubmed_file(directory / "pubmed25n0003.xml.gz", [*sentence_records(200, 3, 3), Record("x1", "T")])
    empty = directory / "pubmed25n0004.xml.gz"
    empty.write_bytes(gzip.compress(b"", mtime=0))
    return {
        "truncated": ([good, truncated], "0 malformed record(s) skipped, 1 file(s) cut short"),
        "broken record": ([good, broken], "1 malformed record(s) skipped, 0 file(s) cut short"),
        "empty input": ([good, empty], "0 malformed record(s) skipped, 1 file(s) cut short"),
    }


@pytest.mark.parametrize("case", ["truncated", "broken record", "empty input"])
def test_a_run_that_lost_records_ends_non_zero_saying_how_many_and_where(case, tmp_path, capsys):
    inputs, summary = lost_cases(tmp_path / "pubmed")[case]
    base = ["prepare-corpus", "--input_files", *map(str, inputs), "--output_dir", str(tmp_path / "out"),
            "--num_workers", "1", "--disable_tqdm", "true"]  # fmt: skip
    with pytest.raises(SystemExit) as ended:
        bioptimus(base)
    message = str(ended.value)
    assert message.startswith(
        f"error: records lost: {summary} (the records after the break unread), in {inputs[1].name}: "
    )
    assert {"truncated": "after record ", "broken record": "record 4", "empty input": "record 0"}[case] in message
    assert "--on_error skip accepts this" in message
    assert (tmp_path / "out" / MANIFEST_NAME).is_file()  # the corpus is written without them, and says so
    capsys.readouterr()
    bioptimus([*base, "--on_error", "skip"])  # the loss accepted: status 0
    assert '"written"' in capsys.readouterr().out


def test_a_refusal_in_a_worker_ends_the_run_in_one_line(tmp_path):
    inputs, _ = lost_cases(tmp_path / "pubmed")["broken record"]
    with pytest.raises(SystemExit) as refused:
        bioptimus(["prepare-corpus", "--input_files", *map(str, inputs), "--output_dir", str(tmp_path / "out"),
                       "--num_workers", "2", "--on_error", "fail", "--disable_tqdm", "true"])  # fmt: skip
    assert str(refused.value) == (
        f"error: {inputs[1]}: record 4: PubmedArticle: PMID 'x1' is not a number (--on_error skip skips it)"
    )
    assert not (tmp_path / "out" / MANIFEST_NAME).exists() and not list((tmp_path / "out").rglob(".*.partial"))


def test_the_progress_bars_name_what_they_count(tmp_path, capsys):
    inputs = [
        write_pubmed_file(tmp_path / f"pubmed25n000{n}.xml.gz", sentence_records(n * 100, 30, n)) for n in (1, 2)
    ]
    bioptimus(["prepare-corpus", "--input_files", *map(str, inputs), "--output_dir", str(tmp_path / "out"),
                   "--num_workers", "1"])  # fmt: skip
    bars = [line.strip() for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if ":" in line]
    parsing = [line for line in bars if line.startswith("parsing PubMed XML (compressed bytes):")]
    writing = [line for line in bars if line.startswith("writing shards:")]
    assert parsing and writing, bars
    assert all("B/s" in line or "?" in line for line in parsing)  # bytes, not shards
    assert "2/2" in writing[-1] and all("shard" in line for line in writing[1:])
