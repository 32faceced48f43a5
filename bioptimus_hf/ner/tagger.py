"""Entities in raw text with a fine-tuned NER model (``bioptimus tag``, :mod:`.tagging_run`): words split by the
tokenizer's own pre-tokenizer, then the path of evaluation (whole-word windows, first-sub-token predictions, the
most-central-window merge, the model's tagging scheme). Entities come in the shape of the token-classification
pipeline's (``aggregation_strategy="first"``); unlike it the tagger decodes BIOUL models and never truncates.
Texts come from any iterable in bounded chunks, results in input order."""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

import torch
from tqdm.auto import tqdm
from transformers import AutoModelForTokenClassification, AutoTokenizer

from ..utils.hardware import device_has_fast_bf16
from ..utils.sequence_length import max_model_tokens
from ..utils.tokenizer_families import tokenizer_for_words
from .encoding import EncodedSplit, length_order, tokenize_windows
from .schemes import pipeline_caveat, tags_to_spans
from .tagger_config import PRECISIONS
from .windows import best_token_positions


logger = logging.getLogger(__name__)

AUTO_BF16 = "bf16"  # what "auto" picks on bf16 hardware (measured: docs/ner.md, "Tagging speed")


def split_words(tokenizer, text: str) -> List[Tuple[str, Tuple[int, int]]]:
    """Words of ``text`` with character offsets, by the tokenizer's pre-tokenizer (else whitespace): the text under
    each pre-token's offsets without surrounding whitespace, the surface word NER training saw (byte-level BPE and
    SentencePiece pre-tokens carry a word-start marker, "Ġ" or "▁", that would tokenize as other characters)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    pre_tokenizer = getattr(backend, "pre_tokenizer", None) if backend is not None else None
    if pre_tokenizer is None:
        return [(m.group(), m.span()) for m in re.finditer(r"\S+", text)]
    words = []
    for _, (start, end) in pre_tokenizer.pre_tokenize_str(text):
        surface = text[start:end]
        if surface.strip():
            start += len(surface) - len(surface.lstrip())
            end -= len(surface) - len(surface.rstrip())
            words.append((text[start:end], (start, end)))
    return words


def resolve_precision(precision: str, device: torch.device) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return AUTO_BF16 if device_has_fast_bf16(device) else "float32"
    return precision


class NerTagger:
    """``NerTagger(model_name_or_path)(texts)`` -> per text, its entities in the token-classification pipeline's
    shape, ``{"entity_group", "score", "word", "start", "end"}``: the type, the mean probability of the predicted
    labels of the entity's words (4 decimals), the text's own characters ``text[start:end]`` (the pipeline decodes
    tokens, lowercased by an uncased tokenizer) and their offsets. ``tag_stream(lines)`` does the same lazily, in input
    order. ``revision`` is passed to every ``from_pretrained``."""

    def __init__(
        self,
        model_name_or_path: str,
        max_seq_length: int = 512,
        stride: int = 32,
        batch_size: int = 32,
        device: str | None = None,
        precision: str = "auto",
        chunk_size: int = 256,
        revision: str | None = None,
    ):
        if batch_size < 1 or chunk_size < 1:
            raise ValueError(f"batch_size and chunk_size must be at least 1, got {batch_size} and {chunk_size}")
        self.tokenizer = tokenizer_for_words(AutoTokenizer.from_pretrained(model_name_or_path, revision=revision))
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.precision = resolve_precision(precision, self.device)
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float32
        self.model = (
            AutoModelForTokenClassification.from_pretrained(model_name_or_path, revision=revision, dtype=dtype)
            .eval()
            .to(self.device)
        )
        self.id2label: Dict[int, str] = {int(k): v for k, v in self.model.config.id2label.items()}
        self.outside = next(i for i, label in self.id2label.items() if label == "O")
        self.scheme = getattr(self.model.config, "ner_tagging_scheme", "BIO")
        caveat = pipeline_caveat(self.scheme)
        if caveat:
            logger.warning("%s: %s", model_name_or_path, caveat)
        limit = min(max_seq_length, max_model_tokens(self.model, self.tokenizer))
        self.max_seq_length = limit
        self.stride = min(stride, limit // 4)
        self.batch_size = batch_size
        self.chunk_size = chunk_size
        self.pad_token_id = self.tokenizer.pad_token_id or 0

    def autocast(self):
        if self.precision == "bf16-autocast":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def encode(self, texts: Sequence[str]) -> Tuple[List[List[Tuple[str, Tuple[int, int]]]], EncodedSplit]:
        """Words of each text and their windows (all texts tokenized in one call)."""
        words = [split_words(self.tokenizer, text) for text in texts]
        token_lists = [[w for w, _ in sentence] for sentence in words]
        return words, tokenize_windows(self.tokenizer, token_lists, self.max_seq_length, self.stride)

    def batches(self, input_ids: Sequence[Sequence[int]]) -> Iterator[Tuple[List[int], Dict[str, torch.Tensor]]]:
        """(rows, model inputs): windows longest first, ``batch_size`` at a time, padded to the batch's longest."""
        order = length_order([len(ids) for ids in input_ids])
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = len(input_ids[rows[0]])
            ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for i, row in enumerate(rows):
                ids[i, : len(input_ids[row])] = torch.tensor(input_ids[row])
                mask[i, : len(input_ids[row])] = 1
            yield rows, {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}

    @torch.inference_mode()
    def predict_windows(self, input_ids: Sequence[Sequence[int]]) -> Tuple[List[List[int]], List[List[float]]]:
        """Per window (input order): label id and its probability for every token."""
        labels: List[List[int]] = [[] for _ in input_ids]
        probabilities: List[List[float]] = [[] for _ in input_ids]
        for rows, batch in self.batches(input_ids):
            with self.autocast():
                logits = self.model(**batch).logits
            best, label = logits.float().softmax(-1).max(-1)
            best, label = best.cpu().tolist(), label.cpu().tolist()
            for i, row in enumerate(rows):
                labels[row], probabilities[row] = label[i], best[i]
        return labels, probabilities

    def _tag_chunk(self, texts: Sequence[str]) -> List[List[dict]]:
        words, encoding = self.encode(texts)
        ids, probabilities = self.predict_windows(encoding.columns["input_ids"])
        results = []
        positions = best_token_positions(encoding.windows, encoding.sentence_lengths)
        for text, sentence, chosen in zip(texts, words, positions):
            labels = [self.id2label[self.outside if c is None else ids[c[0]][c[1]]] for c in chosen]
            scores = [1.0 if c is None else probabilities[c[0]][c[1]] for c in chosen]
            entities = []
            for entity_type, start, end in tags_to_spans(labels, self.scheme):
                char_start, char_end = sentence[start][1][0], sentence[end - 1][1][1]
                entities.append(
                    {
                        "entity_group": entity_type,
                        "score": round(sum(scores[start:end]) / (end - start), 4),
                        "word": text[char_start:char_end],
                        "start": char_start,
                        "end": char_end,
                    }
                )
            results.append(entities)
        return results

    def tag_stream(self, texts: Iterable[str], progress: bool = False) -> Iterator[List[dict]]:
        """Entities of each text of ``texts`` (read lazily, ``chunk_size`` at a time), in input order."""
        texts = iter(texts)
        with tqdm(desc="tagging", unit=" texts", disable=not progress) as bar:
            while chunk := list(itertools.islice(texts, self.chunk_size)):
                yield from self._tag_chunk(chunk)
                bar.update(len(chunk))

    def __call__(self, texts: Sequence[str] | str, progress: bool = False) -> List[List[dict]] | List[dict]:
        if isinstance(texts, str):
            return self._tag_chunk([texts])[0]
        return list(self.tag_stream(texts, progress))
