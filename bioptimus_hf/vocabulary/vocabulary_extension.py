"""Extending a base vocabulary with a domain's tokens (``bioptimus train-tokenizer --vocabulary_mode extend``;
exBERT, Tai et al. 2020; AdaLM, Yao et al. 2021).

The base tokenizer stays as it is; a *candidate* vocabulary of its family trained on the corpus gives the domain
tokens, appended after the base's ids, most useful first, by editing the ``tokenizers`` model in ``tokenizer.json``
(never ``add_tokens``, whose tokens are matched before pre-tokenisation). So a text whose extended tokenization
uses base entries only is tokenized exactly as the base tokenizes it."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tokenizers import Tokenizer

from ..utils.tokenizer_families import tokenizer_family


if TYPE_CHECKING:  # transformers loads when a vocabulary is built, not when a command prints its --help
    from transformers import PreTrainedTokenizerBase


# The choices of --vocabulary_mode: a new vocabulary in place of the base's, or the base's with domain tokens added.
VOCABULARY_MODES = ("replace", "extend")
# How each family's candidates are ordered (written into coverage_report.json).
USEFULNESS = {
    "WordPiece": "emissions of the entry by the candidate tokenizer on the sampled corpus lines",
    "Unigram": "emissions of the piece by the candidate tokenizer on the sampled corpus lines",
    "BPE": "the candidate BPE's merge order (the most frequent pair of the corpus first)",
}


def _pipeline(tokenizer: PreTrainedTokenizerBase) -> dict:
    return json.loads(tokenizer.backend_tokenizer.to_str())


def _emissions(candidate: PreTrainedTokenizerBase, lines: Sequence[str]) -> Counter:
    counts: Counter = Counter()
    for ids in candidate(list(lines), add_special_tokens=False, verbose=False)["input_ids"]:
        counts.update(ids)
    return counts


def _check_contiguous_ids(base: PreTrainedTokenizerBase) -> int:
    """The base's ids must be 0..n-1, so that appended ids follow them; returns n."""
    ids = set(base.get_vocab().values())
    if ids != set(range(len(ids))):
        raise ValueError(
            f"the base tokenizer {base.name_or_path!r} has gaps in its ids (largest {max(ids)}, {len(ids)} entries): "
            "appended tokens would take ids the base's model may use. Use --vocabulary_mode replace"
        )
    return len(ids)


class VocabularyExtension:
    """The ranked domain additions to ``base`` from a ``candidate`` vocabulary of its family; ``build(n)`` makes
    the base tokenizer extended by the first ``n`` of them."""

    def __init__(self, base: PreTrainedTokenizerBase, candidate: PreTrainedTokenizerBase, lines: Sequence[str]):
        self.base, self.family = base, tokenizer_family(base)
        if tokenizer_family(candidate) != self.family:
            raise ValueError(
                f"the candidate vocabulary is {tokenizer_family(candidate).name}, the base "
                f"{self.family.name}: an extension adds entries of the base's own family"
            )
        self.base_size = _check_contiguous_ids(base)
        self.usefulness = USEFULNESS[self.family.model_type]
        base_vocab = base.get_vocab()
        candidate_model = _pipeline(candidate)["model"]
        if self.family.model_type == "BPE":
            self.merges = self._usable_merges(candidate_model, base_vocab)
            self.additions = [left + right for left, right in self.merges]
        else:
            counts = _emissions(candidate, lines)
            id_to_token = {i: t for t, i in candidate.get_vocab().items()}
            scores = dict(candidate_model["vocab"]) if self.family.model_type == "Unigram" else {}
            special = set(candidate.all_special_tokens)
            # Most emitted first; ties (and never-emitted entries) in the candidate's id order.
            ranked = sorted(
                (
                    (-counts.get(i, 0), i)
                    for t, i in candidate.get_vocab().items()
                    if t not in base_vocab and t not in special
                )
            )
            self.additions = [id_to_token[i] for _, i in ranked]
            self.scores = scores

    @staticmethod
    def _usable_merges(candidate_model: dict, base_vocab: dict) -> list[tuple[str, str]]:
        """The candidate's merges, in order, whose parts are known and whose result is not (it becomes known)."""
        known = set(base_vocab)
        usable = []
        for merge in candidate_model["merges"]:
            left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
            if left in known and right in known and left + right not in known:
                usable.append((left, right))
                known.add(left + right)
        return usable

    def __len__(self) -> int:
        return len(self.additions)

    def extended_pipeline(self, added: int) -> dict:
        """The base's ``tokenizer.json`` with the first ``added`` additions appended to its model."""
        pipeline = _pipeline(self.base)
        model = pipeline["model"]
        added = min(added, len(self.additions))
        new_tokens = self.additions[:added]
        # Added tokens past the model's entries (DeBERTa-v3's [MASK], ModernBERT's extra tokens) get their ids from
        # tokenizers after the model's when it loads: they become model entries at their ids first (tokenizers maps
        # an added token found in the model to the model's id; they are matched before the model all the same).
        outside = {
            entry["id"]: entry["content"]
            for entry in pipeline.get("added_tokens", [])
            if entry["content"] not in (model["vocab"] if isinstance(model["vocab"], dict) else ())
        }
        if self.family.model_type == "Unigram":  # ids are list positions
            for missing in range(len(model["vocab"]), self.base_size):
                model["vocab"].append([outside[missing], 0.0])
            model["vocab"].extend([token, self.scores[token]] for token in new_tokens)
        else:
            vocab = model["vocab"]
            vocab.update({content: index for index, content in outside.items()})
            for offset, token in enumerate(new_tokens):
                vocab[token] = self.base_size + offset
            if self.family.model_type == "BPE":
                as_strings = bool(model["merges"]) and isinstance(model["merges"][0], str)
                model["merges"].extend(f"{a} {b}" if as_strings else [a, b] for a, b in self.merges[:added])
        return pipeline

    def build(self, added: int) -> PreTrainedTokenizerBase:
        """The base tokenizer (its class and settings) extended by the first ``added`` additions, loaded back
        through ``AutoTokenizer`` from its saved files, so that ``save_pretrained`` round-trips it."""
        pipeline = self.extended_pipeline(added)
        with tempfile.TemporaryDirectory(prefix="bioptimus_extend_") as directory:
            self.base.save_pretrained(directory)
            for name in os.listdir(directory):  # slow-tokenizer vocab files would describe the base vocabulary
                if name not in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                    os.remove(os.path.join(directory, name))
            Tokenizer.from_str(json.dumps(pipeline)).save(os.path.join(directory, "tokenizer.json"))
            from transformers import AutoTokenizer

            extended = AutoTokenizer.from_pretrained(directory)
        extended.name_or_path = self.base.name_or_path
        check_base_kept(self.base, extended)
        return extended


def changed_base_ids(base: PreTrainedTokenizerBase, tokenizer: PreTrainedTokenizerBase) -> int:
    """How many base entries are absent from ``tokenizer`` or have another id there."""
    vocab = tokenizer.get_vocab()
    return sum(vocab.get(token) != index for token, index in base.get_vocab().items())


def vocabulary_mode(base: PreTrainedTokenizerBase, tokenizer: PreTrainedTokenizerBase) -> dict:
    """How ``tokenizer`` relates to the base vocabulary: ``{"mode": "extend", "added_tokens": n}`` when every base
    entry keeps its string and id and ``n`` entries follow, else ``{"mode": "replace", "added_tokens": None}``."""
    if changed_base_ids(base, tokenizer) == 0 and len(tokenizer) > len(base):
        return {"mode": "extend", "added_tokens": len(tokenizer) - len(base)}
    return {"mode": "replace", "added_tokens": None}


def check_base_kept(base: PreTrainedTokenizerBase, extended: PreTrainedTokenizerBase) -> None:
    """Every base entry keeps its string and id, and the special tokens their roles (else a ValueError)."""
    changed = changed_base_ids(base, extended)
    if changed or base.all_special_tokens != extended.all_special_tokens:
        raise ValueError(
            f"the extended vocabulary changed {changed} base entries or the special tokens "
            f"({base.all_special_tokens} -> {extended.all_special_tokens})"
        )
