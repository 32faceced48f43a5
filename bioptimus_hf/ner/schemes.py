"""Tagging schemes: tag sequences decoded into entity spans ``(entity_type, start, end)`` (word positions, ``end``
exclusive) and spans encoded back into tags, so that training can use IO, BIO (IOB2) or BIOUL while evaluation always
compares spans. ``IO``: ``I-X`` for every word (two adjacent entities of one type merge: the scheme cannot mark the
boundary); ``BIO``: ``B-X`` starts every entity, ``I-X`` continues it; ``BIOUL``: ``B-``, ``I-``, ``L-`` last,
``U-`` single-word; ``IOBES``: the same with ``E-``/``S-``. Decoding is lenient, as model predictions need not be well
formed: a tag that cannot continue the open entity (``I-X`` after ``O`` or another type) starts a new one, as in
``conlleval`` and seqeval's default mode.
"""

from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple


Span = Tuple[str, int, int]

SCHEMES = ("IO", "BIO", "BIOUL", "IOBES")
_ALIASES = {"IOB2": "BIO", "BILOU": "BIOUL", "BIOES": "IOBES"}


def normalize_scheme(name: str) -> str:
    """Return the canonical scheme name for ``name`` (``IOB2`` -> ``BIO``); raise ValueError if unknown."""
    key = name.strip().upper()
    key = _ALIASES.get(key, key)
    if key not in SCHEMES:
        raise ValueError(
            f"unknown tagging scheme {name!r}; choose one of {', '.join(SCHEMES)} (or IOB2, BILOU, BIOES)"
        )
    return key


def split_tag(tag: str) -> Tuple[str, str | None]:
    """Split ``'B-Disease'`` into ``('B', 'Disease')``; ``'O'`` gives ``('O', None)``."""
    if tag == "O":
        return "O", None
    prefix, sep, entity_type = tag.partition("-")
    if not sep or len(prefix) != 1 or not entity_type:
        raise ValueError(f"tag {tag!r} is neither 'O' nor PREFIX-TYPE (e.g. B-Disease)")
    return prefix, entity_type


def detect_scheme(tags: Iterable[str]) -> str:
    """The smallest scheme that explains all ``tags`` (``BIO`` for all-``O`` input); a ValueError when they mix
    ``E-``/``S-`` with ``L-``/``U-`` or use an unknown prefix."""
    prefixes = set()
    for tag in tags:
        prefix, _ = split_tag(tag)
        if prefix != "O":
            prefixes.add(prefix)
    unknown = prefixes - {"B", "I", "E", "S", "L", "U"}
    if unknown:
        raise ValueError(f"unknown tag prefix(es) {sorted(unknown)}; expected B-, I-, E-, S-, L- or U-")
    if prefixes & {"E", "S"} and prefixes & {"L", "U"}:
        raise ValueError(
            "mixed tagging schemes: both IOBES (E-/S-) and BIOUL (L-/U-) prefixes found "
            f"(prefixes seen: {sorted(prefixes)})"
        )
    if prefixes & {"E", "S"}:
        return "IOBES"
    if prefixes & {"L", "U"}:
        return "BIOUL"
    return "BIO"


def tags_to_spans(tags: Sequence[str], scheme: str = "BIO") -> List[Span]:
    """Decode a tag sequence into entity spans (leniently)."""
    scheme = normalize_scheme(scheme)
    spans: List[Span] = []
    open_type: str | None = None
    open_start = 0

    def close(end: int) -> None:
        nonlocal open_type
        if open_type is not None:
            spans.append((open_type, open_start, end))
        open_type = None

    for position, tag in enumerate(tags):
        prefix, entity_type = split_tag(tag)
        if prefix == "O":
            close(position)
            continue
        if scheme == "IO":  # every prefix means "inside": only a type change or O ends an entity
            prefix = "I"
        if prefix in ("B", "U", "S") or entity_type != open_type:
            close(position)
            open_type, open_start = entity_type, position
        # single-word and last-word tags end the entity here
        if prefix in ("U", "S", "L", "E"):
            close(position + 1)
    close(len(tags))
    return spans


def spans_to_tags(spans: Iterable[Span], length: int, scheme: str = "BIO") -> List[str]:
    """Encode entity spans over ``length`` words into tags of ``scheme``."""
    scheme = normalize_scheme(scheme)
    tags = ["O"] * length
    single, last = ("U", "L") if scheme == "BIOUL" else ("S", "E")
    for entity_type, start, end in sorted(spans, key=lambda s: s[1]):
        if not 0 <= start < end <= length:
            raise ValueError(f"span {(entity_type, start, end)} outside a sentence of {length} words")
        if any(tag != "O" for tag in tags[start:end]):
            raise ValueError(f"span {(entity_type, start, end)} overlaps another span")
        for position in range(start, end):
            tags[position] = f"I-{entity_type}"
        if scheme == "IO":
            continue
        tags[start] = f"B-{entity_type}"
        if scheme in ("BIOUL", "IOBES"):
            if end - start == 1:
                tags[start] = f"{single}-{entity_type}"
            else:
                tags[end - 1] = f"{last}-{entity_type}"
    return tags


def convert_tags(tags: Sequence[str], source: str, target: str) -> List[str]:
    """Re-encode ``tags`` from scheme ``source`` into scheme ``target`` through spans."""
    return spans_to_tags(tags_to_spans(tags, source), len(tags), target)


def label_list(entity_types: Iterable[str], scheme: str) -> List[str]:
    """All labels of ``scheme`` for ``entity_types``, ``O`` first, in a stable order."""
    scheme = normalize_scheme(scheme)
    order = {"IO": "I", "BIO": "BI", "BIOUL": "BILU", "IOBES": "BIES"}[scheme]
    return ["O"] + [f"{prefix}-{entity_type}" for entity_type in sorted(set(entity_types)) for prefix in order]


# What transformers' pipeline("token-classification") groups as this module decodes: its grouping knows B-X (start)
# and I-X (continue) only, any other label being a type of its own. No renaming of BIOUL's labels fixes that without
# changing how I-X after L-X is read, so such a model keeps its true labels and its card says what the pipeline
# gets wrong.
PIPELINE_SCHEMES = ("IO", "BIO")


def pipeline_caveat(scheme: str) -> str | None:
    """What ``pipeline("token-classification")`` gets wrong for a model trained in ``scheme`` (None: nothing)."""
    scheme = normalize_scheme(scheme)
    if scheme in PIPELINE_SCHEMES:
        return None
    last, single = ("L", "U") if scheme == "BIOUL" else ("E", "S")
    return (
        f"this model was trained with {scheme} tags: transformers' pipeline('token-classification') knows only B- and "
        f"I- and reads {last}-X and {single}-X as types of their own, so it ends an entity before its last word "
        f"(B-X I-X {last}-X gives two entities) and merges adjacent single-word entities ({single}-X {single}-X "
        "gives one). Tag it with bioptimus tag or bioptimus_hf.ner.tagger.NerTagger, which decode "
        f"{scheme}."
    )
