"""The one corpus reader (bioptimus_hf.utils.corpus_reader) and the stages that read through it."""

import gzip
import subprocess
import sys

import pytest

from bioptimus_hf.utils.corpus_reader import (
    CorpusFileError,
    CorpusReadStats,
    check_corpus_files,
    iter_lines,
    iter_text_lines,
)


def test_undecodable_bytes_are_replaced_counted_and_located(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good line\nbad \xff\xfe bytes\r\n\nanother \xe2\x82 good line\n")
    stats = CorpusReadStats()
    assert list(iter_text_lines([path], stats)) == ["good line", "bad \ufffd\ufffd bytes", "another \ufffd good line"]
    # one U+FFFD per maximal invalid sub-sequence: \xff and \xfe are two, the truncated \xe2\x82 is one
    assert (stats.lines, stats.nonempty_lines, stats.undecodable_lines, stats.replacement_chars) == (4, 3, 2, 3)
    assert stats.undecodable_examples == [f"{path}:2 (byte 4)", f"{path}:4 (byte 8)"]
    assert stats.bytes == path.stat().st_size


def test_lines_keep_empty_ones_and_drop_only_the_line_ending(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"one \r\n\n  two\nlast without newline")
    assert list(iter_lines([path])) == ["one ", "", "  two", "last without newline"]


def test_gzip_padding_empty_and_truncated(tmp_path):
    padded = tmp_path / "padded.txt.gz"
    padded.write_bytes(gzip.compress(b"alpha\nbeta\n") + b"\0" * 64)
    assert list(iter_lines([padded])) == ["alpha", "beta"]
    empty = tmp_path / "empty.txt.gz"
    empty.write_bytes(b"")
    assert list(iter_lines([empty])) == []
    truncated = tmp_path / "truncated.txt.gz"
    truncated.write_bytes(gzip.compress(b"alpha\nbeta\n" * 1000)[:-20])
    with pytest.raises(CorpusFileError, match=r"truncated.txt.gz: corrupt or truncated gzip stream"):
        list(iter_lines([truncated]))
    not_gzip = tmp_path / "plain.txt.gz"
    not_gzip.write_bytes(b"this is not gzip\n")
    with pytest.raises(CorpusFileError, match="plain.txt.gz"):
        list(iter_lines([not_gzip]))


def test_check_refuses_binary_files_and_names_them(tmp_path):
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 400)
    with pytest.raises(CorpusFileError, match=r"model.bin: \d+ of \d+ lines read .* not UTF-8"):
        check_corpus_files([binary])
    stats = check_corpus_files([binary], max_undecodable_fraction=1.0)  # an explicit opt-out
    assert stats.undecodable_lines >= stats.lines - 1  # the first line (bytes 0-10) is ASCII
    with pytest.raises(FileNotFoundError, match="nope.txt does not exist"):
        check_corpus_files([tmp_path / "nope.txt"])
    with pytest.raises(CorpusFileError, match="no corpus files"):
        check_corpus_files([])


def test_check_reads_only_a_prefix_when_asked(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("x" * 99 + "\n" + ("y" * 99 + "\n") * 999, encoding="utf-8")
    assert check_corpus_files([path], max_check_bytes=1000).lines == 10
    assert check_corpus_files([path]).lines == 1000


def test_importing_qikfind_does_not_import_torch():
    code = (
        "import sys, bioptimus_hf.vocabulary.qikfind, bioptimus_hf.utils.corpus_reader; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
