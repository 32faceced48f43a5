"""Tagging in transformers' token-classification pipeline's shape, and what the real pipeline does with a model
trained in each scheme: the same groups as the tagger for IO and BIO; for BIOUL the wrong groups that the tagger's
warning and the model card describe. The models label each word by its first sub-token, with a wide margin, so
the labels are known exactly on any machine."""

import json
import logging

import pytest
import torch
from huggingface_hub import ModelCard
from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.finetuning.model_card import build_ner_card, write_card
from bioptimus_hf.ner import tagger as tagger_module
from bioptimus_hf.ner import tagging_run
from bioptimus_hf.ner.schemes import label_list, pipeline_caveat
from bioptimus_hf.ner.tagger import NerTagger
from helpers.ner import build_tiny_bert


pytestmark = pytest.mark.usefixtures("one_thread")


KEYS = ["entity_group", "score", "word", "start", "end"]


def build_word_labelled_model(directory: str, scheme: str, word_labels: dict) -> str:
    """A token classifier that gives every token the label of ``word_labels`` (``O`` for other tokens): no encoder
    layers, embeddings that are one-hot rows of that label, an identity classifier."""
    build_tiny_bert(directory, num_layers=0)
    labels = label_list(["Chemical", "Disease"], scheme)
    model = AutoModelForTokenClassification.from_pretrained(
        directory,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    model.config.ner_tagging_scheme = scheme
    vocab = AutoTokenizer.from_pretrained(directory).get_vocab()
    embeddings = model.bert.embeddings
    with torch.no_grad():
        embeddings.word_embeddings.weight.zero_()
        for token, index in vocab.items():
            embeddings.word_embeddings.weight[index, labels.index(word_labels.get(token, "O"))] = 10.0
        embeddings.position_embeddings.weight.zero_()
        embeddings.token_type_embeddings.weight.zero_()
        embeddings.LayerNorm.weight.fill_(1.0)
        embeddings.LayerNorm.bias.zero_()
        model.classifier.weight.zero_()
        model.classifier.weight[:, : len(labels)] = torch.eye(len(labels))
        model.classifier.bias.zero_()
    model.save_pretrained(directory)
    return directory


def ours_said(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "bioptimus_hf.ner.tagger"]


def groups(entities):
    return [(e["entity_group"], e["word"], e["start"], e["end"]) for e in entities]


AGREEING = {
    # IO: adjacent words of one type are one entity, for the tagger and the pipeline alike
    "IO": (
        {
            "breast": "I-Disease",
            "cancer": "I-Disease",
            "colon": "I-Disease",
            "tumour": "I-Disease",
            "aspirin": "I-Chemical",
            "cisplatin": "I-Chemical",
        },
        "breast cancer aspirins cisplatin the colon tumour , aspirin",
        [
            ("Disease", "breast cancer"),
            ("Chemical", "aspirins cisplatin"),
            ("Disease", "colon tumour"),
            ("Chemical", "aspirin"),
        ],
    ),
    # BIO: B- splits adjacent entities; an I- after O starts one (lenient decoding, like the pipeline)
    "BIO": (
        {
            "breast": "B-Disease",
            "cancer": "I-Disease",
            "colon": "B-Disease",
            "tumour": "I-Disease",
            "aspirin": "B-Chemical",
            "cisplatin": "I-Chemical",
        },
        "breast cancer colon tumour aspirins cisplatin the tumour",
        [
            ("Disease", "breast cancer"),
            ("Disease", "colon tumour"),
            ("Chemical", "aspirins cisplatin"),
            ("Disease", "tumour"),
        ],
    ),
}


@pytest.mark.parametrize("scheme", ["IO", "BIO"])
def test_the_standard_pipeline_groups_io_and_bio_models_as_the_tagger_does(tmp_path, scheme, caplog):
    word_labels, text, expected = AGREEING[scheme]
    directory = build_word_labelled_model(str(tmp_path / scheme), scheme, word_labels)
    with caplog.at_level(logging.WARNING, logger="bioptimus_hf.ner.tagger"):
        ours = NerTagger(directory, precision="float32")(text)
    assert ours_said(caplog) == []  # nothing to warn about
    assert [list(e) for e in ours] == [KEYS] * len(ours)
    assert [(group, word) for group, word, _, _ in groups(ours)] == expected
    assert all(text[e["start"] : e["end"]] == e["word"] for e in ours)

    theirs = pipeline("token-classification", model=directory, aggregation_strategy="first", device="cpu")(text)
    assert groups(theirs) == groups(ours)
    assert [float(e["score"]) for e in theirs] == pytest.approx([e["score"] for e in ours], abs=1e-4)


def test_a_bioul_model_warns_at_load_what_the_pipeline_gets_wrong(tmp_path, caplog):
    word_labels = {
        "breast": "B-Disease",
        "colon": "I-Disease",
        "cancer": "L-Disease",
        "aspirin": "U-Chemical",
        "cisplatin": "U-Chemical",
    }
    text = "breast colon cancer aspirin cisplatin the breast cancer"
    directory = build_word_labelled_model(str(tmp_path / "bioul"), "BIOUL", word_labels)
    with caplog.at_level(logging.WARNING, logger="bioptimus_hf.ner.tagger"):
        tagger = NerTagger(directory, precision="float32")
    assert ours_said(caplog) == [f"{directory}: {pipeline_caveat('BIOUL')}"]
    assert [(g, w) for g, w, _, _ in groups(tagger(text))] == [
        ("Disease", "breast colon cancer"),
        ("Chemical", "aspirin"),
        ("Chemical", "cisplatin"),
        ("Disease", "breast cancer"),
    ]

    # what the warning says, observed: the entity ends before its L- word, adjacent U- entities merge
    theirs = pipeline("token-classification", model=directory, aggregation_strategy="first", device="cpu")(text)
    assert [(e["entity_group"], e["word"]) for e in theirs] == [
        ("Disease", "breast colon"),
        ("Disease", "cancer"),
        ("Chemical", "aspirin cisplatin"),
        ("Disease", "breast"),
        ("Disease", "cancer"),
    ]
    caveat = pipeline_caveat("BIOUL")
    assert "B-X I-X L-X gives two entities" in caveat and "U-X U-X gives one" in caveat
    assert "bioptimus tag" in caveat and "E-X" in pipeline_caveat("IOBES")


@pytest.mark.parametrize("scheme", ["IO", "BIO", "BIOUL"])
def test_the_model_card_says_how_to_tag_and_whether_the_pipeline_can(tmp_path, scheme):
    labels = label_list(["Disease"], scheme)
    context = {"model_name": "v0.4", "dataset": "NCBI-disease-IOB", "scheme": scheme, "labels": labels}
    written = build_ner_card({**context, "caveat": pipeline_caveat(scheme)})
    path = write_card(str(tmp_path), written)
    card = ModelCard.load(path)
    assert card.data.pipeline_tag == "token-classification" and card.data.library_name == "transformers"
    assert "# v0.4 fine-tuned for NER on NCBI-disease-IOB" in card.text
    assert f"**{scheme}** tagging scheme" in card.text and all(f"`{label}`" in card.text for label in labels)
    assert "bioptimus tag --model_name_or_path MODEL" in card.text
    if scheme == "BIOUL":
        assert "Do not use transformers' pipeline for this model:** " + pipeline_caveat(scheme) in card.text
    else:
        assert pipeline_caveat(scheme) is None
        assert f"groups this model's {scheme} labels into the same entities" in card.text
    assert str(written) == open(path, encoding="utf-8").read()


class _Spy:
    """Records the model and revision of every ``from_pretrained`` of one Auto class, then loads."""

    def __init__(self, real, calls):
        self.real, self.calls = real, calls

    def from_pretrained(self, *args, **kwargs):
        self.calls.append((self.real.__name__, args[0], kwargs.get("revision")))
        return self.real.from_pretrained(*args, **kwargs)


def test_cli_takes_model_name_or_path_and_revision_and_writes_the_pipeline_shape(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tagging_run, "retain_freed_memory", lambda: None)  # not in pytest's own process
    directory = build_word_labelled_model(str(tmp_path / "m"), "BIO", AGREEING["BIO"][0])
    calls = []
    monkeypatch.setattr(tagger_module, "AutoTokenizer", _Spy(AutoTokenizer, calls))
    monkeypatch.setattr(tagger_module, "AutoModelForTokenClassification", _Spy(AutoModelForTokenClassification, calls))
    bioptimus("tag", ["--model_name_or_path", directory, "--revision", "v1", "--text", "the breast cancer"])
    assert calls == [("AutoTokenizer", directory, "v1"), ("AutoModelForTokenClassification", directory, "v1")]
    row = json.loads(capsys.readouterr().out)
    assert row["line"] == 1 and [list(e) for e in row["entities"]] == [KEYS]
    assert groups(row["entities"]) == [("Disease", "breast cancer", 4, 17)]

    # no model at all, or one that is neither a folder nor a Hub id: one line
    with pytest.raises(SystemExit, match=r"^error: give --model_name_or_path \(a fine-tuned model directory"):
        bioptimus("tag", ["--text", "x"])
    missing = str(tmp_path / "missing")  # no such folder, and not a Hub id either: refused as parsed
    with pytest.raises(SystemExit, match=rf"^error: --model_name_or_path {missing}: neither a directory nor a Hub id"):
        bioptimus("tag", ["--model_name_or_path", missing, "--revision", "v1", "--text", "x"])
    with pytest.raises(SystemExit, match=r"^error: --model_name_or_path acme/missing --revision v1: [^\n]+$"):
        bioptimus("tag", ["--model_name_or_path", "acme/missing", "--revision", "v1", "--text", "x"])  # offline
