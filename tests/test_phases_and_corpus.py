import gzip

import pytest

from bioptimus_hf.pretraining.phases import phase_boundaries, phase_index_at, resolve_phase_steps
from bioptimus_hf.utils.corpus_reader import CorpusFileError, check_corpus_files


def test_fractions_allocate_all_steps_and_later_phases_get_more():
    counts = resolve_phase_steps([0.1, 0.2, 0.3, 0.4], 101)
    assert sum(counts) == 101
    assert counts == sorted(counts)
    assert resolve_phase_steps([100, 200, 300, 400], 1000) == [100, 200, 300, 400]


def test_phase_lookup_by_step():
    ends = phase_boundaries([2, 4, 6])
    assert ends == [2, 6, 12]
    assert [phase_index_at(s, ends) for s in range(13)] == [0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2]


@pytest.mark.parametrize(
    "steps,max_steps,message",
    [
        ([0.5, 0.5, 0.0], 10, "positive number of steps"),
        ([0.3, 0.3], 10, "sum to 0.6"),
        ([0.5, 10], 10, "mixes step counts and fractions"),
        ([0.01, 0.99], 10, "get no steps"),
        ([], 10, "empty"),
    ],
)
def test_bad_phase_steps(steps, max_steps, message):
    with pytest.raises(ValueError, match=message):
        resolve_phase_steps(steps, max_steps)


def test_corpus_checks(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt does not exist"):
        check_corpus_files([missing])
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match="empty.txt is empty"):
        check_corpus_files([empty])
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\nbroken \xff\xfe bytes\nanother fine line\n")
    with pytest.raises(CorpusFileError, match=r"bad.txt: 1 of 3 lines read \(33.3%\) hold bytes that are not UTF-8"):
        check_corpus_files([bad])  # a third of the lines: not a text file with a stray byte
    report = check_corpus_files([bad], max_undecodable_fraction=0.5)
    assert report.undecodable_lines == 1 and report.nonempty_lines == 3
    assert report.undecodable_examples == [f"{bad}:2 (byte 7)"]
    assert "U+FFFD" in report.summary()
    zipped = tmp_path / "c.txt.gz"
    with gzip.open(zipped, "wb") as handle:
        handle.write(b"one\ntwo\n")
    assert check_corpus_files([zipped]).nonempty_lines == 2
