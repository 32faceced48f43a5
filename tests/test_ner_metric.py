"""The span-F1 `evaluate` module shipped in the package: offline loading, hand-computed scores, identity with the
project's span scoring, and run_ner.py's compute_metrics going through it."""

import configparser
import fnmatch
import os
import socket
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from transformers import AutoTokenizer

from bioptimus_hf.ner.conll import Sentence
from bioptimus_hf.ner.encoding import encode_split
from bioptimus_hf.ner.evaluation import SPAN_F1, load_span_f1, predicted_spans, span_scores
from bioptimus_hf.ner.schemes import label_list, spans_to_tags, tags_to_spans
from helpers.ner import build_tiny_bert, synthetic_sentences


pytestmark = pytest.mark.usefixtures("one_thread")


REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails the test: the module must load from the package's own directory."""

    def refuse(self, address):
        raise AssertionError(f"network access to {address}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def span_f1(no_network):
    import evaluate

    return evaluate.load(SPAN_F1, keep_in_memory=True)


def test_evaluate_load_offline_gives_the_hand_computed_scores(span_f1):
    # gold (BIO): (D,0,2) (C,3,4) | (D,0,1); predicted (BIOUL): (D,0,2) (C,3,4) | (C,1,2) (C,2,3)
    references = [["B-D", "I-D", "O", "B-C"], ["B-D", "O", "O"]]
    predictions = [["B-D", "L-D", "O", "U-C"], ["O", "U-C", "U-C"]]
    scores = span_f1.compute(predictions=predictions, references=references, scheme="BIOUL", reference_scheme="BIO")
    assert scores == pytest.approx(
        {"precision": 2 / 4, "recall": 2 / 3, "f1": 4 / 7, "gold_entities": 3, "predicted_entities": 4}, abs=1e-12
    )
    # the predictions' scheme decides the spans: in IO, B-C B-C is one entity; in BIO, two
    io = span_f1.compute(
        predictions=[["B-C", "B-C"]], references=[["B-C", "B-C"]], scheme="IO", reference_scheme="BIO"
    )
    assert (io["f1"], io["predicted_entities"], io["gold_entities"]) == (0.0, 1, 2)
    bio = span_f1.compute(predictions=[["B-C", "B-C"]], references=[["B-C", "B-C"]], scheme="BIO")
    assert (bio["f1"], bio["predicted_entities"]) == (1.0, 2)


def test_batches_added_then_computed_and_mismatched_lengths_named(span_f1):
    span_f1.add_batch(predictions=[["B-D", "I-D"]], references=[["B-D", "I-D"]])
    span_f1.add_batch(predictions=[["O"]], references=[["B-C"]])
    assert span_f1.compute() == pytest.approx(
        {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "gold_entities": 2, "predicted_entities": 1}, abs=1e-12
    )
    with pytest.raises(ValueError, match="sentence 0: 2 predicted tags but 1 reference tags"):
        span_f1.compute(predictions=[["O", "O"]], references=[["O"]])


def random_sentences(rng, count=60):
    types = ["Disease", "Chemical"]
    sentences = []
    for index in range(count):
        length = int(rng.integers(1, 12))
        choices = ["O", "O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]
        tags = [str(rng.choice(choices)) for _ in range(length)]
        words = [f"w{index}_{i}" for i in range(length)]
        sentences.append(Sentence(words, tags, tags_to_spans(tags, "BIO"), 1))
    return sentences, types


@pytest.mark.parametrize("scheme", ["IO", "BIO", "BIOUL"])
def test_the_module_equals_the_projects_span_scores_on_random_tags(span_f1, scheme):
    rng = np.random.default_rng(7)
    sentences, types = random_sentences(rng)
    labels = label_list(types, scheme)
    predictions = [[str(rng.choice(labels)) for _ in s.tokens] for s in sentences]  # ill-formed ones included
    expected = span_scores(sentences, [tags_to_spans(tags, scheme) for tags in predictions])
    assert expected["predicted_entities"] > 20 and 0 < expected["f1"] < 1
    gold = [spans_to_tags(s.spans, len(s.tokens), "BIO") for s in sentences]
    assert span_f1.compute(predictions=predictions, references=gold, scheme=scheme, reference_scheme="BIO") == expected
    # the gold written in the training scheme reads back to the same spans
    in_scheme = [spans_to_tags(s.spans, len(s.tokens), scheme) for s in sentences]
    if scheme != "IO":  # IO cannot write adjacent entities of one type
        assert span_f1.compute(predictions=predictions, references=in_scheme, scheme=scheme) == expected


@pytest.mark.parametrize("scheme", ["BIO", "BIOUL"])
def test_run_ners_compute_metrics_goes_through_the_module_with_identical_numbers(tmp_path, scheme, monkeypatch):
    import bioptimus_hf.ner.evaluation as evaluation

    metric, computed = load_span_f1(), []
    compute_with_the_module = metric.compute
    metric.compute = lambda **inputs: computed.append(inputs["scheme"]) or compute_with_the_module(**inputs)
    monkeypatch.setattr(evaluation, "load_span_f1", lambda: metric)
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_bert(str(tmp_path / "model")))
    sentences = [Sentence(tokens, tags, tags_to_spans(tags, "BIO"), 1) for tokens, tags in synthetic_sentences(40, 3)]
    labels = label_list(["Chemical", "Disease"], scheme)
    label2id = {label: i for i, label in enumerate(labels)}
    id2label = dict(enumerate(labels))
    encoded = encode_split(tokenizer, sentences, scheme, label2id, 16, 4, sort_by_length=True)
    assert len(encoded.windows) > len(sentences)  # windows merged back into sentences
    rng = np.random.default_rng(0)
    width = max(len(ids) for ids in encoded.dataset["input_ids"])
    logits = rng.normal(size=(len(encoded.windows), width, len(labels)))
    compute = evaluation.build_compute_metrics(encoded, sentences, id2label, scheme)
    expected = span_scores(sentences, predicted_spans(encoded, logits.argmax(-1), id2label, scheme))
    assert expected["predicted_entities"] > 20
    assert compute(SimpleNamespace(predictions=logits)) == expected
    assert compute(SimpleNamespace(predictions=logits.argmax(-1))) == expected
    assert computed == [scheme, scheme]  # both numbers came out of the evaluate module


def test_the_module_is_package_data():
    """setup.cfg ships every file of the module's directory with the package (wheels and sdists)."""
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["bioptimus_hf.ner"].split(",")]
    package = REPO_ROOT / "bioptimus_hf" / "ner"
    files = sorted(str(p.relative_to(package)) for p in Path(SPAN_F1).iterdir() if p.is_file())
    assert "metrics/span_f1/span_f1.py" in files and "metrics/span_f1/README.md" in files
    assert all(any(fnmatch.fnmatch(f, p) for p in patterns) for f in files)
    assert Path(SPAN_F1) == package / "metrics" / "span_f1" and os.path.basename(SPAN_F1) == "span_f1"
