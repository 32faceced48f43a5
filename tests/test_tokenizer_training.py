import json
import os

import pytest
from transformers import AutoTokenizer, BertTokenizer

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.vocabulary.tokenizer_training import coverage_report, train_tokenizer


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def tiny_base_tokenizer(tmp_path):
    """An uncased BERT tokenizer that knows only characters and a few words: biomedical words split a lot."""
    vocab = SPECIALS + list(LETTERS + "-.,()") + ["##" + c for c in LETTERS] + ["the", "of", "cell", "cells"]
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    path = str(tmp_path / "base_tok")
    tokenizer.save_pretrained(path)
    return path


CORPUS = [
    "Interleukin 2 activates the T cells of the thymus .",
    "The interleukin receptor binds interleukin 2 in cells .",
    "Phosphorylation of the kinase activates the receptor .",
    "The kinase phosphorylation of STAT5 follows interleukin signalling .",
] * 20


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    return str(path)


def test_trained_tokenizer_round_trip_keeps_base_pipeline(tmp_path, corpus_file):
    base_path = tiny_base_tokenizer(tmp_path)
    out = str(tmp_path / "new_tok")
    new = train_tokenizer([corpus_file], base_path, vocab_size=150, output_dir=out, show_progress=False)
    loaded = AutoTokenizer.from_pretrained(out)
    assert loaded.is_fast
    assert set(os.listdir(out)) >= {"tokenizer.json", "tokenizer_config.json", "vocab.txt"}
    assert len(loaded) == len(new) <= 150
    # Frequent biomedical words became single entries.
    assert loaded.tokenize("interleukin kinase") == ["interleukin", "kinase"]
    # Base normalisation (uncased) and special tokens are kept.
    assert loaded("INTERLEUKIN")["input_ids"] == loaded("interleukin")["input_ids"]
    for role in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        assert getattr(loaded, role) == getattr(AutoTokenizer.from_pretrained(base_path), role)
    ids = loaded("kinase")["input_ids"]
    assert ids[0] == loaded.cls_token_id and ids[-1] == loaded.sep_token_id
    # vocab.txt lists the vocabulary in id order.
    lines = open(os.path.join(out, "vocab.txt"), encoding="utf-8").read().splitlines()
    assert lines == loaded.convert_ids_to_tokens(list(range(len(loaded))))


def test_coverage_report_counts(tmp_path, corpus_file):
    base_path = tiny_base_tokenizer(tmp_path)
    new = train_tokenizer([corpus_file], base_path, vocab_size=150, show_progress=False)
    report = coverage_report(new, base_path, [corpus_file], sample_lines=4, seed=0)
    base_vocab = set(AutoTokenizer.from_pretrained(base_path).get_vocab())
    new_vocab = set(new.get_vocab())
    assert report["shared_tokens"] == len(base_vocab & new_vocab)
    assert report["new_tokens"] == len(new_vocab - base_vocab)
    assert report["shared_tokens"] + report["new_tokens"] == report["new_vocab_size"]
    sample = report["sample"]
    assert sample["lines"] == 4
    assert sample["new_splits_fewer"] + sample["new_splits_equal"] + sample["new_splits_more"] == sample["words"]
    # The sampled lines are 4 of the corpus lines, each 8 to 10 words; the base splits "interleukin"
    # (11 characters) into 11 pieces, the new vocabulary keeps it whole.
    assert 32 <= sample["words"] <= 40
    assert sample["new_splits_fewer"] >= 1
    assert sample["new_pieces_per_word"] < sample["base_pieces_per_word"]


def test_empty_and_missing_corpus_errors(tmp_path):
    base_path = tiny_base_tokenizer(tmp_path)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.txt is empty"):
        train_tokenizer([str(empty)], base_path, vocab_size=100, show_progress=False)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        train_tokenizer([str(tmp_path / "nope.txt")], base_path, vocab_size=100, show_progress=False)


def test_vocabulary_sizes_that_cannot_be_honoured_are_refused(tmp_path, corpus_file):
    base_path = tiny_base_tokenizer(tmp_path)
    with pytest.raises(ValueError, match=r"--vocab_size 3 leaves no room .* 5 special tokens"):
        train_tokenizer([corpus_file], base_path, vocab_size=3, show_progress=False)
    out = tmp_path / "too_small"
    with pytest.raises(
        ValueError, match=r"--vocab_size 20 is smaller than the corpus alphabet .* returned \d+ entries"
    ):
        train_tokenizer([corpus_file], base_path, vocab_size=20, output_dir=str(out), show_progress=False)
    assert not out.exists()  # nothing mislabelled was saved


def test_cli_writes_tokenizer_and_report(tmp_path, corpus_file, capsys):
    base_path = tiny_base_tokenizer(tmp_path)
    out = str(tmp_path / "cli_tok")
    args = ["--train_files", corpus_file, "--base_tokenizer", base_path, "--output_dir", out, "--vocab_size", "140"]
    report = bioptimus("train-tokenizer", args)
    on_disk = json.load(open(os.path.join(out, "coverage_report.json")))
    assert on_disk == report
    assert on_disk["corpus"]["nonempty_lines"] == len(CORPUS)
    assert AutoTokenizer.from_pretrained(out).is_fast
    assert '"new_tokens"' in capsys.readouterr().out


def test_reading_the_corpus_shows_a_bar_of_its_lines_and_the_help_names_a_prepared_corpus(
    tmp_path, corpus_file, capsys
):
    """The trainer's own bars start once the whole corpus is read: the reading has its bar (main process), and
    ``--train_files`` says it takes a prepared corpus directory too."""
    base_path = tiny_base_tokenizer(tmp_path)
    train_tokenizer([corpus_file], base_path, vocab_size=140, show_progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n")
    assert "vocabulary training: reading the corpus: 100%|" in bar and f"{len(CORPUS)}/{len(CORPUS)}" in bar
    train_tokenizer([corpus_file], base_path, vocab_size=140, show_progress=False)
    assert "reading the corpus" not in capsys.readouterr().err

    with pytest.raises(SystemExit):
        bioptimus("train-tokenizer", ["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--train_files" in help_text and "or a prepared corpus directory (bioptimus prepare-corpus)" in help_text
    assert "Corpus text files" not in help_text
