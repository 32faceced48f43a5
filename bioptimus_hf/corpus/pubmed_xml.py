"""One PubMed XML file (NLM's baseline or update file, the PubMed DTD), read as a stream of citations and deletions.

:func:`read_pubmed_file` parses with ``xml.etree.ElementTree.iterparse`` and clears each top-level record once
read, so memory stays flat whatever the file's size. It yields, in document order:

* :class:`Citation` for each ``PubmedArticle`` (and ``PubmedBookArticle``): PMID and its ``Version``, the title,
  the abstract (the ``AbstractText`` sections in order, each after its ``Label`` and ": " when it has one and
  ``section_labels`` is on, joined by a space), the languages, the year of publication (``PubDate/Year``, else the
  first year in ``MedlineDate``, else ``ArticleDate/Year``). Inline markup (``<i>``, ``<sup>``, MathML) keeps its
  text; runs of white space become one space.
* :class:`Deletion` for each PMID of a ``DeleteCitation``.
* :class:`Malformed` for a record that cannot be used (no PMID, a PMID or version that is not a number), with its
  position: the record's number in the file (1-based, counting every top-level record).

A file that ends early (a truncated ``.gz``, XML cut off or broken) raises :class:`PubmedFileError` naming the
file and the position (the last complete record, and the XML line and column where there is one) after the
records read before it were yielded: the caller decides whether they are kept.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator


ARTICLE_TAGS = ("PubmedArticle", "PubmedBookArticle")
DELETE_TAG = "DeleteCitation"
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")


class PubmedFileError(ValueError):
    """A PubMed file that cannot be read to its end; the message names the file and where it stopped."""

    def __init__(self, path: Path, position: str, reason: str):
        super().__init__(f"{path}: {position}: {reason}")
        self.path, self.position, self.reason = path, position, reason

    def __reduce__(self):  # raised in worker processes
        return (type(self), (self.path, self.position, self.reason))


@dataclass
class Citation:
    pmid: int
    version: int
    title: str
    abstract: str
    languages: list[str] = field(default_factory=list)
    year: int | None = None
    record: int = 0  # its number among the file's top-level records (1-based)

    @property
    def text(self) -> str:
        """The title, then the abstract (one space between), the text unit every stage reads."""
        return f"{self.title} {self.abstract}".strip()


@dataclass
class Deletion:
    pmid: int
    version: int | None
    record: int = 0


@dataclass
class Malformed:
    record: int
    reason: str

    def position(self) -> str:
        return f"record {self.record}"


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def element_text(element: ET.Element | None) -> str:
    """An element's text with its inline markup's text, white space normalised ('' for None)."""
    return "" if element is None else normalise_space("".join(element.itertext()))


def abstract_text(abstract: ET.Element | None, section_labels: bool = True) -> str:
    if abstract is None:
        return ""
    sections = []
    for section in abstract.iter("AbstractText"):
        body = element_text(section)
        label = normalise_space(section.get("Label") or "")
        if section_labels and label:
            body = f"{label}: {body}" if body else f"{label}:"
        if body:
            sections.append(body)
    return " ".join(sections)


def _number(text: str | None, what: str) -> int:
    text = (text or "").strip()
    if not text.isdigit():
        raise ValueError(f"{what} {text!r} is not a number" if text else f"no {what}")
    return int(text)


def _year(*elements: ET.Element | None) -> int | None:
    for element in elements:
        if element is None:
            continue
        found = _YEAR.search(element_text(element))
        if found:
            return int(found.group(1))
    return None


def _citation(record: ET.Element, number: int, section_labels: bool) -> Citation:
    if record.tag == "PubmedArticle":
        body = record.find("MedlineCitation")
        if body is None:
            raise ValueError("no MedlineCitation")
        article = body.find("Article")
        if article is None:
            raise ValueError("no Article")
        title_element = article.find("ArticleTitle")
        abstract = article.find("Abstract")
        languages = article.findall("Language")
        issue_date = article.find("Journal/JournalIssue/PubDate")
        year = _year(
            issue_date.find("Year") if issue_date is not None else None,
            issue_date.find("MedlineDate") if issue_date is not None else None,
            article.find("ArticleDate/Year"),
        )
    else:  # PubmedBookArticle
        body = record.find("BookDocument")
        if body is None:
            raise ValueError("no BookDocument")
        title_element = body.find("ArticleTitle")
        if title_element is None:
            title_element = body.find("Book/BookTitle")
        abstract = body.find("Abstract")
        languages = body.findall("Language")
        year = _year(body.find("Book/PubDate/Year"), body.find("Book/PubDate/MedlineDate"))
    pmid_element = body.find("PMID")
    if pmid_element is None:
        raise ValueError("no PMID")
    pmid = _number(pmid_element.text, "PMID")
    version = _number(pmid_element.get("Version") or "1", "PMID Version")
    return Citation(
        pmid=pmid,
        version=version,
        title=element_text(title_element),
        abstract=abstract_text(abstract, section_labels),
        languages=[element_text(language) for language in languages if element_text(language)],
        year=year,
        record=number,
    )


class _CountingReader:
    """A binary file wrapper that hashes and counts the (compressed) bytes read, for the manifest and progress."""

    def __init__(self, raw, on_bytes: Callable[[int], None] | None):
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.bytes = 0
        self.on_bytes = on_bytes

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.sha256.update(data)
        self.bytes += len(data)
        if self.on_bytes is not None and data:
            self.on_bytes(len(data))
        return data

    def readinto(self, buffer) -> int:  # what gzip asks of its file object
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()


@dataclass
class FileReading:
    """What reading one file saw besides its records: the input's checksum and size (compressed bytes)."""

    sha256: str = ""
    bytes: int = 0


def read_pubmed_file(
    path: str | Path,
    *,
    section_labels: bool = True,
    on_bytes: Callable[[int], None] | None = None,
    reading: FileReading | None = None,
) -> Iterator[Citation | Deletion | Malformed]:
    """Yield the file's citations, deletions and malformed records in document order (see the module docstring).

    ``reading`` (optional) receives the sha256 and count of the bytes read (the whole file's unless it broke off);
    ``on_bytes(n)`` is called with the bytes read from disk as they are read (progress bars)."""
    path = Path(path)
    raw = _CountingReader(open(path, "rb"), on_bytes)
    stream = gzip.GzipFile(fileobj=raw, mode="rb") if path.name.endswith(".gz") else raw
    number = 0
    root = None
    try:
        try:
            for event, element in ET.iterparse(stream, events=("start", "end")):
                if event == "start":
                    if root is None:
                        root = element
                    continue
                if element.tag not in (*ARTICLE_TAGS, DELETE_TAG) or element is root:
                    continue
                number += 1
                if element.tag == DELETE_TAG:
                    for pmid in element.iter("PMID"):
                        try:
                            version = pmid.get("Version")
                            yield Deletion(
                                _number(pmid.text, "PMID"),
                                _number(version, "PMID Version") if version else None,
                                number,
                            )
                        except ValueError as error:
                            yield Malformed(number, f"DeleteCitation: {error}")
                else:
                    try:
                        yield _citation(element, number, section_labels)
                    except ValueError as error:
                        yield Malformed(number, f"{element.tag}: {error}")
                root.clear()  # the records read so far: memory stays flat in the file's size
        except ET.ParseError as error:
            line, column = error.position
            raise PubmedFileError(
                path,
                f"after record {number}, XML line {line}, column {column}",
                f"XML ends or breaks ({_reason(error)})",
            ) from None
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as error:
            raise PubmedFileError(
                path, f"after record {number}", f"corrupt or truncated gzip stream ({error})"
            ) from None
        if root is None:
            raise PubmedFileError(path, "record 0", "no XML element (an empty file)")
    finally:
        raw.close()
        if reading is not None:  # of the bytes read: the whole file unless it broke off
            reading.sha256 = raw.sha256.hexdigest()
            reading.bytes = raw.bytes


def _reason(error: ET.ParseError) -> str:
    return re.sub(r": line \d+, column \d+$", "", str(error))
