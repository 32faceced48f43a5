"""CoNLL-style NER files (``token<TAB>label``, a blank line between sentences; ``-DOCSTART-`` lines skipped), read
and validated before any model is built, so that bad input fails naming its file and line: a missing or empty file,
a line without exactly two tab-separated columns, a label neither ``O`` nor ``PREFIX-TYPE`` with a known prefix, a
file mixing IOBES (``E-``/``S-``) and BIOUL (``L-``/``U-``) prefixes. A continuation tag with nothing to continue
(``I-X`` after ``O`` or another type) is repaired by default: it starts a new entity, as in conlleval and seqeval's
default mode (so IOB1 files read correctly), the repairs counted and logged; ``strict`` makes it an error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence

from .schemes import Span, detect_scheme, spans_to_tags, split_tag, tags_to_spans


logger = logging.getLogger(__name__)


class ConllFormatError(ValueError):
    """Bad NER input; the message names the file (and line) at fault."""


@dataclass
class Sentence:
    tokens: List[str]
    tags: List[str]  # as written in the file
    spans: List[Span]  # gold entities decoded from ``tags`` (the reference for evaluation)
    line: int  # 1-based line number of the first token, for error messages


@dataclass
class ConllSplit:
    path: str
    sentences: List[Sentence]
    scheme: str  # scheme detected in the file: BIO, BIOUL or IOBES
    repaired_lines: List[int] = field(default_factory=list)  # lines of repaired orphan I-/L-/E- tags

    @property
    def entity_types(self) -> List[str]:
        return sorted({span[0] for sentence in self.sentences for span in sentence.spans})

    def first_line_of_type(self) -> Dict[str, int]:
        """For each entity type, the line of its first occurrence (for error messages)."""
        first: Dict[str, int] = {}
        for sentence in self.sentences:
            for entity_type, start, _ in sentence.spans:
                first.setdefault(entity_type, sentence.line + start)
        return first


# A NER data directory: <split>.tsv for each split, test optional (BLURB's NER sets in ../shared/data/ner/)
NER_SPLITS = ("train", "devel", "test")
REQUIRED_NER_SPLITS = ("train", "devel")


def ner_split_path(data_dir: str | os.PathLike, split: str) -> str:
    return os.path.join(data_dir, f"{split}.tsv")


def is_ner_data_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds the splits a NER run needs."""
    return all(os.path.isfile(ner_split_path(path, split)) for split in REQUIRED_NER_SPLITS)


def _orphan_positions(tags: Sequence[str]) -> List[int]:
    """Positions of continuation tags (I-, L-, E-) that do not continue an open entity of their type."""
    orphans = []
    open_type = None
    for position, tag in enumerate(tags):
        prefix, entity_type = split_tag(tag)
        if prefix == "O":
            open_type = None
            continue
        if prefix in ("I", "L", "E") and entity_type != open_type:
            orphans.append(position)
        open_type = None if prefix in ("L", "E", "U", "S") else entity_type
    return orphans


def _read_line(path: str, line_number: int, raw_bytes: bytes) -> tuple[str, str, str] | None:
    """One line of a CoNLL file as ``(token, tag, tag prefix)``, None for a sentence break (a blank line or
    ``-DOCSTART-``); a malformed line raises :class:`ConllFormatError` naming it."""
    try:
        raw = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConllFormatError(
            f"{path}:{line_number}: not UTF-8 (byte {error.start} of the line, 0x{raw_bytes[error.start]:02x}); "
            "convert the file, e.g. `iconv -f latin1 -t utf-8`"
        ) from None
    line = raw.rstrip("\r\n")
    if not line.strip() or line.startswith("-DOCSTART-"):
        return None
    columns = line.split("\t")
    if len(columns) != 2:
        raise ConllFormatError(
            f"{path}:{line_number}: expected 2 tab-separated columns (token<TAB>label), found {len(columns)}: {line!r}"
        )
    token, tag = columns[0], columns[1].strip()
    if not token.strip() or not tag:
        raise ConllFormatError(f"{path}:{line_number}: empty token or label: {line!r}")
    try:
        prefix, _ = split_tag(tag)
    except ValueError as error:
        raise ConllFormatError(f"{path}:{line_number}: {error}") from None
    if prefix not in ("O", "B", "I", "E", "S", "L", "U"):
        raise ConllFormatError(f"{path}:{line_number}: unknown tag prefix in {tag!r}; expected O or B-/I-/E-/S-/L-/U-")
    return token, tag, prefix


def _read_sentences(path: str) -> tuple[List[Sentence], Dict[str, int]]:
    """The sentences of a CoNLL file (spans not yet decoded) and the first line of each tag prefix."""
    sentences: List[Sentence] = []
    tokens: List[str] = []
    tags: List[str] = []
    start_line = 0
    first_line_of_prefix: Dict[str, int] = {}

    def flush() -> None:
        if tokens:
            sentences.append(Sentence(list(tokens), list(tags), [], start_line))
            tokens.clear()
            tags.clear()

    with open(path, "rb") as handle:
        for line_number, raw_bytes in enumerate(handle, start=1):
            read = _read_line(path, line_number, raw_bytes)
            if read is None:
                flush()
                continue
            token, tag, prefix = read
            first_line_of_prefix.setdefault(prefix, line_number)
            if not tokens:
                start_line = line_number
            tokens.append(token)
            tags.append(tag)
    flush()
    return sentences, first_line_of_prefix


def _decoded(path: str, sentences: List[Sentence], scheme: str, strict: bool, in_file: bool = True) -> ConllSplit:
    """``sentences`` with their gold spans decoded in ``scheme``, each orphan continuation tag repaired (its line,
    or its example's number, recorded) or, with ``strict``, an error naming it."""
    repaired: List[int] = []
    for sentence in sentences:
        for position in _orphan_positions(sentence.tags):
            line = sentence.line + position if in_file else sentence.line
            if strict:
                raise ConllFormatError(
                    f"{path}{':' if in_file else ': example '}{line}: {sentence.tags[position]!r} does not continue "
                    "an entity (I- without B-); fix the data or read it without --strict_iob to start a new entity here"
                )
            repaired.append(line)
        sentence.spans = tags_to_spans(sentence.tags, scheme)
    if repaired:
        logger.warning(
            "%s: %d continuation tag(s) without a preceding B- (first at line(s) %s) were read as the start "
            "of a new entity",
            path,
            len(repaired),
            ", ".join(map(str, repaired[:5])),
        )
    return ConllSplit(path, sentences, scheme, repaired)


def read_conll(path: str | os.PathLike, strict: bool = False) -> ConllSplit:
    """Read and validate one CoNLL NER file (the module docstring's rules)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ConllFormatError(f"{path}: no such file")
    sentences, first_line_of_prefix = _read_sentences(path)
    if not sentences:
        raise ConllFormatError(f"{path}: file contains no sentences (empty, or only blank lines)")
    iobes = sorted(first_line_of_prefix[p] for p in ("E", "S") if p in first_line_of_prefix)
    bioul = sorted(first_line_of_prefix[p] for p in ("L", "U") if p in first_line_of_prefix)
    if iobes and bioul:
        raise ConllFormatError(
            f"{path}: mixed tagging schemes: IOBES tags (E-/S-) first at line {iobes[0]} and "
            f"BIOUL tags (L-/U-) first at line {bioul[0]}; convert the file to one scheme"
        )
    return _decoded(path, sentences, detect_scheme(tag for s in sentences for tag in s.tags), strict)


def check_entity_types(train: ConllSplit, other: ConllSplit) -> None:
    """Raise if ``other`` (devel/test) has entity types the model never saw in ``train``."""
    known = set(train.entity_types)
    unknown = {t: line for t, line in other.first_line_of_type().items() if t not in known}
    if unknown:
        where = ", ".join(f"{t!r} (first at line {line})" for t, line in sorted(unknown.items()))
        raise ConllFormatError(
            f"{other.path}: entity type(s) absent from the training file {train.path}: {where}; "
            "the classifier has no label for them"
        )


def sentences_from_tags(
    token_lists: Iterable[Sequence[str]], tag_lists: Iterable[Sequence[str]], name: str, strict: bool = False
) -> ConllSplit:
    """A validated ConllSplit from in-memory tokens and tags (e.g. a ``datasets`` split)."""
    sentences = [
        Sentence(list(tokens), list(tags), [], index + 1)
        for index, (tokens, tags) in enumerate(zip(token_lists, tag_lists))
        if len(tokens)
    ]
    if not sentences:
        raise ConllFormatError(f"{name}: no sentences")
    for sentence in sentences:
        if len(sentence.tokens) != len(sentence.tags):
            raise ConllFormatError(
                f"{name}: example {sentence.line}: {len(sentence.tokens)} tokens but {len(sentence.tags)} tags"
            )
    try:
        scheme = detect_scheme(tag for s in sentences for tag in s.tags)
    except ValueError as error:
        raise ConllFormatError(f"{name}: {error}") from None
    return _decoded(name, sentences, scheme, strict, in_file=False)


def write_conll(path: str | os.PathLike, sentences: Sequence[Sentence], predicted_spans: Sequence[List[Span]]) -> None:
    """Write ``token<TAB>gold<TAB>predicted`` lines (IOB2, conlleval's layout), a blank line between sentences; the
    gold tags are re-encoded from the gold spans, so the file is IOB2 whatever the input scheme was."""
    with open(path, "w", encoding="utf-8") as handle:
        for sentence, spans in zip(sentences, predicted_spans):
            gold = spans_to_tags(sentence.spans, len(sentence.tokens), "BIO")
            predicted = spans_to_tags(spans, len(sentence.tokens), "BIO")
            for token, gold_tag, predicted_tag in zip(sentence.tokens, gold, predicted):
                handle.write(f"{token}\t{gold_tag}\t{predicted_tag}\n")
            handle.write("\n")
