"""Tagging raw text with a fine-tuned NER model: entity spans with character offsets.

The text is split into words by the tokenizer's own pre-tokenizer (for BERT: whitespace and
punctuation, which matches the pre-tokenised BLURB training files), then goes through exactly the
path used in evaluation: whole-word windows, first-sub-token predictions, the most-central-window
merge, and decoding in the scheme the model was trained with (``config.ner_tagging_scheme``, written
by run_ner.py; BIO when absent). This is what ``pipeline("token-classification",
aggregation_strategy="first")`` does for BIO models, but it also decodes IO/BIOUL models and never
truncates long abstracts.

    bioptimus-ner-tag --model out/seed_1 --text "Mutations in BRCA1 cause breast cancer."
    bioptimus-ner-tag --model out/seed_1 --input_file abstracts.txt --output_file entities.jsonl
"""

from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

import torch
from tqdm.auto import tqdm
from transformers import AutoModelForTokenClassification, AutoTokenizer, DataCollatorWithPadding

from .encoding import encode_sentences
from .schemes import tags_to_spans
from .windows import best_token_positions


def split_words(tokenizer, text: str) -> List[Tuple[str, Tuple[int, int]]]:
    """Words of ``text`` with character offsets, by the tokenizer's pre-tokenizer (else whitespace)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    pre_tokenizer = getattr(backend, "pre_tokenizer", None) if backend is not None else None
    if pre_tokenizer is not None:
        return [(word, offsets) for word, offsets in pre_tokenizer.pre_tokenize_str(text) if word.strip()]
    return [(m.group(), m.span()) for m in re.finditer(r"\S+", text)]


class NerTagger:
    """``NerTagger(model_dir)(texts)`` -> per text, a list of entity dicts
    ``{"type", "start", "end", "text", "score"}`` (character offsets into the text, ``end`` exclusive;
    ``score`` is the mean probability of the predicted labels of the entity's words)."""

    def __init__(self, model_dir: str, max_seq_length: int = 512, stride: int = 32, batch_size: int = 32, device: str | None = None):
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.to(self.device)
        self.id2label: Dict[int, str] = {int(k): v for k, v in self.model.config.id2label.items()}
        self.scheme = getattr(self.model.config, "ner_tagging_scheme", "BIO")
        limit = min(max_seq_length, self.tokenizer.model_max_length, getattr(self.model.config, "max_position_embeddings", max_seq_length))
        self.max_seq_length = limit
        self.stride = min(stride, limit // 4)
        self.batch_size = batch_size
        self.collator = DataCollatorWithPadding(self.tokenizer)

    @torch.no_grad()
    def _window_predictions(self, dataset, progress: bool):
        ids, probabilities = [], []
        rows = range(0, len(dataset), self.batch_size)
        for start in tqdm(rows, desc="tagging", disable=not progress):
            batch = self.collator([dataset[i] for i in range(start, min(start + self.batch_size, len(dataset)))])
            batch = {k: v.to(self.device) for k, v in batch.items()}
            probs = self.model(**batch).logits.softmax(-1)
            best, label = probs.max(-1)
            ids.extend(label.cpu().tolist())
            probabilities.extend(best.cpu().tolist())
        return ids, probabilities

    def __call__(self, texts: Sequence[str] | str, progress: bool = False) -> List[List[dict]]:
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        words = [split_words(self.tokenizer, text) for text in texts]
        token_lists = [[w for w, _ in sentence] for sentence in words]
        encoded = encode_sentences(self.tokenizer, token_lists, self.max_seq_length, self.stride)
        ids, probabilities = self._window_predictions(encoded.dataset, progress) if len(encoded.dataset) else ([], [])
        outside = next(i for i, label in self.id2label.items() if label == "O")
        results = []
        for text, sentence, chosen in zip(texts, words, best_token_positions(encoded.windows, encoded.sentence_lengths)):
            labels = [self.id2label[outside if c is None else ids[c[0]][c[1]]] for c in chosen]
            scores = [1.0 if c is None else probabilities[c[0]][c[1]] for c in chosen]
            entities = []
            for entity_type, start, end in tags_to_spans(labels, self.scheme):
                char_start, char_end = sentence[start][1][0], sentence[end - 1][1][1]
                entities.append(
                    {
                        "type": entity_type,
                        "start": char_start,
                        "end": char_end,
                        "text": text[char_start:char_end],
                        "score": round(sum(scores[start:end]) / (end - start), 4),
                    }
                )
            results.append(entities)
        return results[0] if single else results
