"""benchmarks/vocabulary_extension_speed.py: words counted from the trained batches, and a two-arm record."""

import collections
import importlib
import json
import os
import sys

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

from helpers import corpus_lines, run_script


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
# benchmarks/ is on the path only while its modules load (its scripts must not shadow packages for the suite).
sys.path.insert(0, BENCHMARKS)
try:
    _machine = importlib.import_module("_machine")
    bench = importlib.import_module("_pretraining_bench")
    speed = importlib.import_module("vocabulary_extension_speed")
finally:
    sys.path.remove(BENCHMARKS)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ADDED_WORDS = 1500  # 1.36 tokens per word on the test corpus against 2.15 (the tiny base vocabulary):
# far apart beyond the spread of a few timed blocks


def hand_tokenizer(tmp_path):
    vocab = [*SPECIALS, "the", "cell", "##s", "divide", "##d", ".", "##ing", "grow"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return BertTokenizerFast(vocab=str(tmp_path / "vocab.txt"), do_lower_case=True)


def test_words_are_the_word_starts_of_the_unmasked_ids_of_the_timed_batches(tmp_path):
    tokenizer = hand_tokenizer(tmp_path)
    ids = tokenizer(["the cells divided.", "cells grow"])["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids[0]) == ["[CLS]", "the", "cell", "##s", "divide", "##d", ".", "[SEP]"]
    width = len(ids[0])
    original = torch.tensor([ids[0], ids[1] + [tokenizer.pad_token_id] * (width - len(ids[1]))])
    # words: the, cell, divide, . (4) and cell, grow (2); specials, padding and ## pieces start none
    vocab = tokenizer.get_vocab()
    masked, labels = original.clone(), torch.full_like(original, -100)
    for row, col, replacement in ((0, 1, "[MASK]"), (0, 3, "[MASK]"), (0, 4, "##ing"), (1, 2, "the")):
        labels[row, col] = original[row, col]  # a word start hidden, a piece hidden, a start swapped for a piece
        masked[row, col] = vocab[replacement]
    batch = {"input_ids": masked, "labels": labels}

    starts = bench.word_start_table(tokenizer)
    assert [token for token, index in sorted(vocab.items(), key=lambda item: item[1]) if starts[index]] == [
        "the",
        "cell",
        "divide",
        ".",
        "grow",
    ]
    assert int(bench.count_words(batch, starts)) == 6
    assert int(starts[masked].sum()) == 5  # counted on the masked ids instead, the swapped start is lost

    clock = bench.StepClock(warmup_steps=1, word_starts=starts)
    for _ in range(3):  # the first step is the warm-up: its words are not timed
        clock.count_batch(batch)
        clock.close_step_batches()
    assert clock.timed_words(first_step_index=0) == 12


def test_words_are_not_counted_without_a_wordpiece_tokenizer(tiny_tokenizer):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    assert bench.word_start_table(PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")) is None
    assert bench.word_start_table(tiny_tokenizer) is not None


def test_run_threads_follow_omp_num_threads_where_set_lower(monkeypatch):
    monkeypatch.setattr(_machine, "cpus_available", lambda: 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _machine.run_torch_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "16")
    assert _machine.run_torch_threads() == 4
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert _machine.run_torch_threads() == 4


@pytest.mark.parametrize(
    "arms, message",
    [
        ("only=DIR", "at least two"),
        ("a=DIR,a=DIR", "given twice"),
        ("a=DIR,b", "is not NAME=MODEL_DIR"),
        ("a=DIR,b=missing", "b=missing is not a model directory"),
    ],
)
def test_bad_arms_end_in_one_line_naming_the_flag(tmp_path, monkeypatch, tiny_model_dir, arms, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        run_script(monkeypatch, speed, ["--arms", arms.replace("DIR", str(tiny_model_dir))])
    error = str(exit_info.value.code)
    assert error.startswith("error: --arms") and message in error and "\n" not in error


def extended_model_dir(tmp_path, base_dir):
    """The base tokenizer's vocabulary plus the corpus's most frequent words it splits, and a model with a row each."""
    base = BertTokenizerFast.from_pretrained(base_dir)
    pieces = base.backend_tokenizer.pre_tokenizer
    counts = collections.Counter(
        word for line in corpus_lines(300) for word, _ in pieces.pre_tokenize_str(line.lower())
    )
    split = [word for word, _ in counts.most_common() if len(base.tokenize(word)) > 1][:ADDED_WORDS]
    vocab = sorted(base.get_vocab(), key=base.get_vocab().get) + split
    out = tmp_path / "extended"
    out.mkdir()
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=True, model_max_length=128)
    tokenizer.save_pretrained(out)
    config = BertConfig.from_pretrained(base_dir, vocab_size=len(tokenizer))
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(out)
    return out


def test_ratios_are_per_round_with_their_median_and_range():
    runs = []
    for continued, extended in ((100.0, 150.0), (200.0, 220.0), (100.0, 130.0)):  # words/s, three rounds
        for name, words in (("continued", continued), ("extended", extended)):
            runs.append(
                {
                    "name": name,
                    "vocab_size": 10 if name == "continued" else 12,
                    "words_per_second": words,
                    "words_per_cpu_second": words,
                    "tokens_per_second": 2 * words,
                    "tokens_per_cpu_second": 2 * words,
                    "tokens_per_word": 2.0,
                }
            )
    summary = {  # summarize_arms's medians of what the runs above give
        name: {"median_tokens_per_second": 2 * words, "median_words_per_second": words, "median_tokens_per_word": 2.0}
        for name, words in (("continued", 100.0), ("extended", 150.0))
    }
    figures = speed.figures_of(summary, runs, ["continued", "extended"])
    assert figures["continued"] == {"tokens_per_s": 200, "words_per_s": 100, "tokens_per_word": 2.0, "vocab_size": 10}
    assert figures["extended"]["words_per_s"] == 150 and figures["extended"]["vocab_size"] == 12
    assert figures["extended_vs_continued"]["words_per_s_ratio"] == {
        "median": 1.3,
        "min": 1.1,
        "max": 1.5,
        "rounds": [1.5, 1.1, 1.3],
    }


def test_two_arms_run_in_fresh_processes_and_write_one_record_with_words_per_second_and_the_ratio(
    tmp_path, monkeypatch, tiny_model_dir
):
    extended = extended_model_dir(tmp_path, tiny_model_dir)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(300)) + "\n")
    output = tmp_path / "speed.json"
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    argv = [
        "--arms", f"continued={tiny_model_dir},extended={extended}",
        "--rounds", 1, "--warmup_steps", 1, "--timed_steps", 2, "--batch_size", 4, "--block_size", 64,
        "--corpus", corpus, "--max_lines", 300, "--peak_tflops", 1, "--output_json", output,
    ]  # fmt: skip
    run_script(monkeypatch, speed, argv)

    record = json.loads(output.read_text())
    assert "vocabulary_extension_speed.py --arms continued=" in record["command"]
    figures, detail = record["figures"], record["detail"]
    assert [run["name"] for run in detail["runs"]] == ["continued", "extended"]
    for run in detail["runs"]:
        assert run["recipe"] == "ours" and run["precision"] == "float32" and run["timed_steps"] == 2
        assert run["torch_threads"] == 1 and run["timed_words"] > 0
        assert run["words_per_second"] == pytest.approx(run["timed_words"] / run["timed_seconds"])
        assert run["tokens_per_word"] == pytest.approx(2 * 4 * 64 / run["timed_words"])
    continued, extended_run = detail["runs"]
    assert figures["continued"]["vocab_size"] == len(BertTokenizerFast.from_pretrained(tiny_model_dir))
    assert figures["extended"]["vocab_size"] == figures["continued"]["vocab_size"] + ADDED_WORDS
    # the added words are whole: fewer tokens per word than the base vocabulary's pieces
    assert figures["extended"]["tokens_per_word"] < figures["continued"]["tokens_per_word"]
    ratio = extended_run["words_per_second"] / continued["words_per_second"]
    assert figures["extended_vs_continued"]["words_per_s_ratio"] == {
        "median": round(ratio, 3),
        "min": round(ratio, 3),
        "max": round(ratio, 3),
        "rounds": [round(ratio, 3)],
    }
