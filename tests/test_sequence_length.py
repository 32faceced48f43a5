"""The longest sequence a model takes (bioptimus_hf/utils/sequence_length.py), read the same way by the tagger,
run_ner.py and the pre-training data: RoBERTa-family positions start past the pad id, and a tokenizer built by
hand often names no limit (transformers' huge sentinel)."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaForTokenClassification,
    TrainingArguments,
)

from bioptimus_hf.ner.tagger import NerTagger
from bioptimus_hf.pretraining.bioptimus_config import PretrainingDataArguments
from bioptimus_hf.pretraining.data import load_pretraining_datasets
from bioptimus_hf.utils.sequence_length import max_config_tokens, max_model_tokens, position_offset
from helpers import corpus_lines
from helpers.families import _bert_tokenizer, _roberta_tokenizer, _tiny


NO_LIMIT = int(1e30)  # what transformers reports for a tokenizer saved without model_max_length
LINES = corpus_lines(800)


@pytest.fixture(scope="module")
def unlimited_roberta_tokenizer():
    tokenizer = _roberta_tokenizer(LINES)
    tokenizer.model_max_length = NO_LIMIT
    return tokenizer


def roberta_config(tokenizer, positions=34, **extra):
    return RobertaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=positions,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        **_tiny(),
        **extra,
    )


def test_roberta_positions_start_past_the_pad_id(unlimited_roberta_tokenizer):
    tokenizer = unlimited_roberta_tokenizer
    model = RobertaForMaskedLM(roberta_config(tokenizer))
    assert tokenizer.pad_token_id == 1 and position_offset(model) == 2
    assert max_model_tokens(model, tokenizer) == 32  # 34 positions, numbered from 2
    assert max_config_tokens(model.config, tokenizer) == 32  # the same, read before any weights exist
    # the last position the model accepts is the limit, one more fails in the embeddings
    ids = torch.full((1, 32), 5)
    model(input_ids=ids)
    with pytest.raises((IndexError, RuntimeError)):
        model(input_ids=torch.full((1, 33), 5))


def test_bert_positions_and_the_smaller_of_the_two_limits():
    tokenizer = _bert_tokenizer(LINES)  # model_max_length 64
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), max_position_embeddings=40, **_tiny()))
    assert position_offset(model) == 0 and max_model_tokens(model, tokenizer) == 40
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), max_position_embeddings=128, **_tiny()))
    assert max_model_tokens(model, tokenizer) == 64  # the tokenizer's limit is the smaller
    tokenizer.model_max_length = NO_LIMIT
    assert max_model_tokens(model, tokenizer) == 128


def test_tagger_windows_fit_a_roberta_whose_tokenizer_names_no_limit(tmp_path, unlimited_roberta_tokenizer):
    tokenizer = unlimited_roberta_tokenizer
    labels = {0: "O", 1: "B-Disease", 2: "I-Disease"}
    config = roberta_config(tokenizer, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    RobertaForTokenClassification(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    tagger = NerTagger(str(tmp_path), precision="float32")
    assert tagger.max_seq_length == 32  # was 34 (max_position_embeddings): "index 34 is out of bounds"
    text = " ".join(LINES[:4])  # well over one window
    words, encoding = tagger.encode([text])
    assert len(encoding.windows) > 1 and max(len(ids) for ids in encoding.columns["input_ids"]) == 32
    entities = tagger(text)
    assert all(text[e["start"] : e["end"]] == e["word"] for e in entities)


def test_pretraining_blocks_fit_the_model_when_the_tokenizer_names_no_limit(tmp_path, unlimited_roberta_tokenizer):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(LINES[:300]) + "\n", encoding="utf-8")
    data_args = PretrainingDataArguments(train_file=[str(corpus)], validation_split_percentage=5)
    training_args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    model = RobertaForMaskedLM(roberta_config(unlimited_roberta_tokenizer))
    data = load_pretraining_datasets(
        data_args,
        unlimited_roberta_tokenizer,
        training_args,
        model_max_tokens=max_model_tokens(model, unlimited_roberta_tokenizer),
    )
    assert data.max_seq_length == 32
    lengths = {len(row["input_ids"]) for row in data.train}
    assert max(lengths) == 32


def test_a_config_transformers_cannot_build_falls_back_to_its_positions(monkeypatch, caplog):
    import bioptimus_hf.utils.sequence_length as sequence_length

    def unbuildable(config):
        raise ValueError("Unrecognized configuration class")

    tokenizer = _bert_tokenizer(LINES)
    tokenizer.model_max_length = NO_LIMIT
    monkeypatch.setattr(sequence_length.AutoModel, "from_config", unbuildable)
    config = BertConfig(max_position_embeddings=40, **_tiny())
    with caplog.at_level("WARNING"):
        assert max_config_tokens(config, tokenizer) == 40
    assert "could not build BertConfig on the meta device" in caplog.text
