"""Tiny models and CoNLL files for the NER tests (built in code: nothing is downloaded), and the flags of a short
run_ner.py run on them."""

from __future__ import annotations

import os
import random

import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizer

from helpers import flags


WORDS = (
    "the a of and with in was were is patients cells study risk gene protein cancer disease breast colon "
    "tumour aspirin cisplatin dopamine syndrome deficiency treated induced by , . ( ) -"
).split()
DISEASES = [["breast", "cancer"], ["colon", "tumour"], ["deficiency"], ["breast", "tumour", "syndrome"]]
CHEMICALS = [["aspirin"], ["cisplatin"], ["dopamine"]]
FILLER = ["the", "patients", "were", "treated", "with", "a", "study", "of", "risk", "in", "cells", ","]


def build_tiny_bert(directory: str, num_layers: int = 2, max_len: int = 64) -> str:
    """Save a tiny random BERT (MLM head, like a release) and its WordPiece tokenizer to ``directory``."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s", "##ing"]
    vocab += list("abcdefghijklmnopqrstuvwxyz") + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, model_max_length=max_len)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_len,
    )
    torch.manual_seed(0)  # the same "pretrained" weights in every test session
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


TAGGER_LABELS = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]


def build_tiny_tagger(directory: str) -> str:
    """A tiny random token classifier saved to ``directory``: random weights tag plenty of entities, which is
    what the tagging tests compare; the classifier is scaled up for confident, varied labels."""
    from transformers import AutoModelForTokenClassification

    build_tiny_bert(directory)
    torch.manual_seed(1)
    model = AutoModelForTokenClassification.from_pretrained(
        directory,
        num_labels=len(TAGGER_LABELS),
        id2label=dict(enumerate(TAGGER_LABELS)),
        label2id={label: i for i, label in enumerate(TAGGER_LABELS)},
    )
    with torch.no_grad():
        model.classifier.weight.mul_(20)
    model.save_pretrained(directory)
    return directory


def synthetic_sentences(count: int, seed: int, types=("Disease", "Chemical")):
    """Sentences of filler words with inserted entities, as (tokens, IOB2 tags)."""
    rng = random.Random(seed)
    pools = {"Disease": DISEASES, "Chemical": CHEMICALS}
    sentences = []
    for _ in range(count):
        tokens, tags = [], []
        for _ in range(rng.randint(1, 3)):
            for word in rng.sample(FILLER, rng.randint(1, 4)):
                tokens.append(word)
                tags.append("O")
            entity_type = rng.choice(types)
            entity = rng.choice(pools[entity_type])
            tokens += entity
            tags += [f"B-{entity_type}"] + [f"I-{entity_type}"] * (len(entity) - 1)
        tokens.append(".")
        tags.append("O")
        sentences.append((tokens, tags))
    return sentences


def write_tsv(path: str, sentences) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        for tokens, tags in sentences:
            for token, tag in zip(tokens, tags):
                handle.write(f"{token}\t{tag}\n")
            handle.write("\n")
    return path


def write_dataset_dir(directory: str, sizes=(60, 20, 20), types=("Disease", "Chemical")) -> str:
    os.makedirs(directory, exist_ok=True)
    for seed, (split, size) in enumerate(zip(("train", "devel", "test"), sizes)):
        write_tsv(os.path.join(directory, f"{split}.tsv"), synthetic_sentences(size, seed, types))
    return directory


def tagging_texts() -> list[str]:
    """The texts the tagger tests tag: 30 synthetic sentences, as running text."""
    return [" ".join(tokens) for tokens, _ in synthetic_sentences(30, 11)]


# run_ner.py's settings for a short CPU run on build_tiny_bert's model and write_dataset_dir's data: no checkpoints,
# reports or progress bars; windows of 16 sub-tokens, so that the longer test sentences are split.
QUICK_NER = {
    "report_to": "none",
    "save_strategy": "no",
    "disable_tqdm": True,
    "use_cpu": True,
    "max_seq_length": 16,
    "window_stride": 4,
}
# Enough training for the tiny BERT to learn write_dataset_dir's entities (the tests that check F1 use it).
LEARNING_NER = {"num_train_epochs": 8, "learning_rate": 5e-3, "per_device_train_batch_size": 8, "warmup_steps": 0.1}


def quick_ner_flags(**settings) -> list[str]:
    """run_ner.py's flags for :data:`QUICK_NER` with ``settings`` over it (a setting of ``None`` leaves its flag out)."""
    return flags({**QUICK_NER, **settings})
