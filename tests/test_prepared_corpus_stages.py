"""Every stage reads what bioptimus prepare-corpus writes, the directory or its shards, exactly as it reads the same
lines from a text file: vocabulary training, qik-find (both backends), the pre-training data (map-style and
streaming) and a streaming pre-training run."""

import json

import pytest
from transformers import AutoTokenizer, TrainingArguments

import run_pretraining
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.pretraining.bioptimus_config import DEFAULT_SHUFFLE_BUFFER_SIZE, PretrainingDataArguments
from bioptimus_hf.pretraining.data import load_pretraining_datasets, shuffle_buffer_size, text_corpus_files
from bioptimus_hf.utils.corpus_reader import iter_lines
from bioptimus_hf.utils.prepared_corpus import shard_paths
from bioptimus_hf.vocabulary.qikfind import FindOptions, find_contexts, rust_available
from helpers import run_script
from helpers.pretraining import base_args
from helpers.pubmed import write_prepared_corpus


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def prepared(tmp_path):
    """A prepared corpus of 200 citations in two files, and a text file of the same lines in the same order."""
    directory = write_prepared_corpus(tmp_path)
    text = tmp_path / "same_lines.txt"
    text.write_text("".join(line + "\n" for line in iter_lines([directory])), encoding="utf-8")
    assert len(text.read_text().splitlines()) == 200
    return directory, text


def test_train_tokenizer_reads_the_directory_as_its_lines(tmp_path, prepared, tiny_tokenizer_dir):
    directory, text = prepared
    read = []
    for name, files in [("from_dir", [directory]), ("from_shards", shard_paths(directory)), ("from_text", [text])]:
        out = tmp_path / name
        report = bioptimus(
            "train-tokenizer",
            [
                "--train_files",
                *map(str, files),
                "--base_tokenizer",
                str(tiny_tokenizer_dir),
                "--vocab_size",
                "400",
                "--output_dir",
                str(out),
            ],
        )
        assert len(AutoTokenizer.from_pretrained(out)) == 400
        read.append({key: value for key, value in report["corpus"].items() if key != "files"})
    # The trainer saw the same lines (its ids and ties among equally frequent pairs vary from run to run even on
    # one text file, so the vocabularies themselves are not compared).
    assert read[0] == read[1] == read[2] and read[0]["nonempty_lines"] == 200


@pytest.mark.parametrize("backend", ["python", "rust"])
def test_qikfind_reads_the_directory_as_its_lines(prepared, tiny_tokenizer, backend):
    if backend == "rust" and not rust_available():
        pytest.skip("the qik-find extension is not built")
    directory, text = prepared
    targets = [tiny_tokenizer.convert_tokens_to_ids(t) for t in ("cells", "the", "of", "protein")]
    from_dir = find_contexts(directory, tiny_tokenizer, targets, FindOptions(5), backend=backend, progress=False)
    from_text = find_contexts(text, tiny_tokenizer, targets, FindOptions(5), backend=backend, progress=False)
    assert from_dir == from_text
    assert sum(len(c) for c in from_dir.values()) > 5


def data_args(files, **settings):
    return PretrainingDataArguments(
        train_file=[str(f) for f in files], max_seq_length=32, validation_split_percentage=0, **settings
    )


def test_the_pretraining_data_of_the_directory_are_those_of_its_lines(tmp_path, prepared, tiny_tokenizer):
    directory, text = prepared
    training = TrainingArguments(str(tmp_path / "o"), report_to="none", seed=3)
    from_dir = load_pretraining_datasets(data_args([directory]), tiny_tokenizer, training).train
    from_text = load_pretraining_datasets(data_args([text]), tiny_tokenizer, training).train
    assert len(from_dir) > 20 and from_dir["input_ids"] == from_text["input_ids"]
    assert text_corpus_files(data_args([directory])) == [str(p) for p in shard_paths(directory)]

    # Streaming without a buffer: the shards in a seeded order, each read through.
    assert shuffle_buffer_size(data_args([directory])) == 0
    assert shuffle_buffer_size(data_args([text])) == DEFAULT_SHUFFLE_BUFFER_SIZE
    assert shuffle_buffer_size(data_args([directory], shuffle_buffer_size=7)) == 7
    streamed = load_pretraining_datasets(data_args([directory], streaming=True), tiny_tokenizer, training).train
    blocks = [tuple(row["input_ids"]) for row in streamed]
    shards = shard_paths(directory)
    in_order = []
    for order in (shards, shards[::-1]):
        one = load_pretraining_datasets(data_args(order), tiny_tokenizer, training).train
        in_order.append([tuple(ids) for ids in one["input_ids"]])
    assert blocks in in_order  # every row once, the shards in one of their two orders


def test_a_streaming_run_trains_on_the_directory(monkeypatch, tmp_path, prepared, tiny_model_dir):
    directory, _ = prepared
    out = tmp_path / "out"
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(tiny_model_dir, directory, out)
        + ["--streaming", "true", "--max_steps", 8, "--bulk_dropout", "false"],
    )
    info = json.loads((out / "releases" / "v0.4" / "bioptimus_phase.json").read_text())
    assert info["end_step"] == 8 and info["heldout_mlm_loss"] > 0
    assert info["run"]["train_files"] == ["prepared"]
