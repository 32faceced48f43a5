"""One PubMed XML file read as a stream of citations and deletions (:func:`read_pubmed_file`, for ``bioptimus
prepare-corpus``), memory flat whatever the file's size: only the elements a citation is read from are parsed
(docs/pubmed.md: what is checked). It yields a :class:`Citation`, :class:`Deletion` or :class:`Malformed` per record;
a file that ends early raises :class:`PubmedFileError` naming the position, after the records before it."""

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
RECORD_TAGS = (*ARTICLE_TAGS, DELETE_TAG)
FIELDS_TAG = "PubmedArticleFields"  # the element the fields cut out of a PubmedArticle are parsed in
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")


class PubmedFileError(ValueError):
    """A PubMed file that cannot be read to its end; the message names the file and where it stopped."""

    def __init__(self, path: Path, position: str, reason: str):
        super().__init__(f"{path}: {position}: {reason}")
        self.path, self.position, self.reason = path, position, reason

    def __reduce__(self):  # raised in worker processes
        return (type(self), (self.path, self.position, self.reason))


@dataclass(slots=True)
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
    # Printable text holds no white space but ASCII spaces: unchanged unless two meet or one is at an end.
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return " ".join(text.split())


def element_text(element: ET.Element | None) -> str:
    """An element's text with its inline markup's text, white space normalised ('' for None)."""
    return "" if element is None else normalise_space("".join(element.itertext()))


def abstract_text(abstract: ET.Element | None, section_labels: bool = True) -> str:
    """The ``AbstractText`` sections in order, each after its label and ': ' (``section_labels``), white space
    normalised once over the whole (what normalising each section and joining them by a space gives)."""
    if abstract is None:
        return ""
    parts = []
    for section in abstract.iter("AbstractText"):
        label = section.get("Label") if section_labels else None
        body = "".join(section.itertext())
        parts.append(f"{label}: {body}" if label and not label.isspace() else body)
    return normalise_space(" ".join(parts))


def _number(text: str | None, what: str) -> int:
    text = (text or "").strip()
    if not text.isdigit():
        raise ValueError(f"{what} {text!r} is not a number" if text else f"no {what}")
    return int(text)


def _child(element: ET.Element | None, *tags: str) -> ET.Element | None:
    """``element.find("a/b/c")`` without ElementPath (a chain of the C ``find``)."""
    for tag in tags:
        if element is None:
            return None
        element = element.find(tag)
    return element


def _year(*elements: ET.Element | None) -> int | None:
    for element in elements:
        if element is None:
            continue
        found = _YEAR.search("".join(element.itertext()))
        if found:
            return int(found.group(1))
    return None


def _languages(elements: list[ET.Element]) -> list[str]:
    codes = (element_text(language) for language in elements)
    return [code for code in codes if code]


def _citation(record: ET.Element, number: int, section_labels: bool) -> Citation:
    if record.tag == FIELDS_TAG:  # the fields cut out of a PubmedArticle (:func:`_cut_fields`)
        article = body = record
        title_element = record.find("ArticleTitle")
        issue_date = record.find("PubDate")
    elif record.tag == "PubmedArticle":
        body = record.find("MedlineCitation")
        if body is None:
            raise ValueError("no MedlineCitation")
        article = body.find("Article")
        if article is None:
            raise ValueError("no Article")
        title_element = article.find("ArticleTitle")
        issue_date = _child(article, "Journal", "JournalIssue", "PubDate")
    else:  # PubmedBookArticle
        return _book_citation(record, number, section_labels)
    year = _year(_child(issue_date, "Year"), _child(issue_date, "MedlineDate"), _child(article, "ArticleDate", "Year"))
    return _new_citation(body, title_element, article, year, number, section_labels)


def _book_citation(record: ET.Element, number: int, section_labels: bool) -> Citation:
    body = record.find("BookDocument")
    if body is None:
        raise ValueError("no BookDocument")
    title_element = body.find("ArticleTitle")
    if title_element is None:
        title_element = _child(body, "Book", "BookTitle")
    date = _child(body, "Book", "PubDate")
    year = _year(_child(date, "Year"), _child(date, "MedlineDate"))
    return _new_citation(body, title_element, body, year, number, section_labels)


def _new_citation(body, title_element, parent, year: int | None, number: int, section_labels: bool) -> Citation:
    """The citation of a record: its PMID (``body``'s), title, and the abstract and languages under ``parent``."""
    pmid_element = body.find("PMID")
    if pmid_element is None:
        raise ValueError("no PMID")
    pmid = _number(pmid_element.text, "PMID")
    version = _number(pmid_element.get("Version") or "1", "PMID Version")
    return Citation(
        pmid=pmid,
        version=version,
        title=element_text(title_element),
        abstract=abstract_text(parent.find("Abstract"), section_labels),
        languages=_languages(parent.findall("Language")),
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


_RECORD_START = re.compile(rb"<(PubmedArticle|PubmedBookArticle|DeleteCitation)(?=[\s>/])")
_RECORD_END = {tag.encode(): re.compile(rb"</" + tag.encode() + rb"\s*>") for tag in RECORD_TAGS}
_ENCODING = re.compile(rb"""<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']""")
_CHUNK_BYTES = 1 << 20  # of XML parsed at once
_READ_BYTES = 1 << 18  # of the file read at once


def _chunks(raw: _CountingReader, gzipped: bool) -> Iterator[bytes]:
    """The file's bytes, decompressed as they come (``gzip -d``'s rules: members one after another, zero padding
    after them), so that what precedes a cut or a corrupt block is read before the error."""
    while True:
        data = raw.read(_READ_BYTES)
        if not gzipped or not data:
            if data:
                yield data
                continue
            return
        break
    decompressor = zlib.decompressobj(wbits=31)
    while data:
        while data:  # at most a chunk out at a time, whatever the compression ratio
            yield decompressor.decompress(data, _CHUNK_BYTES)
            data = decompressor.unconsumed_tail
            if decompressor.eof and decompressor.unused_data.lstrip(b"\x00"):  # another member follows
                data = decompressor.unused_data.lstrip(b"\x00")
                decompressor = zlib.decompressobj(wbits=31)
        data = raw.read(_READ_BYTES)
    if not decompressor.eof:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")


class _EmptyFile(Exception):
    """A file without any XML (0 bytes, or white space only)."""


class _Document:
    """The document outside its records (declaration, root, the space between records), checked by its own parser
    so that the file is refused as a whole when its skeleton is broken; lines are counted in the whole file."""

    def __init__(self):
        self.parser = ET.XMLParser()
        self.line = 1  # of the next byte fed
        self.encoding: str | None = None
        self.started = False

    def feed(self, data: bytes, record: bytes = b"") -> None:
        if not self.started and data.strip():
            self.started = True
            found = _ENCODING.search(data)
            self.encoding = found.group(1).decode("ascii") if found else None
        # a record stands as its line breaks: the skeleton's lines are the file's
        self.parser.feed(data + b"\n" * record.count(b"\n"))
        self.line += data.count(b"\n") + record.count(b"\n")

    def record_parser(self) -> ET.XMLParser:
        plain = self.encoding is None or self.encoding.lower().replace("-", "") == "utf8"
        return ET.XMLParser() if plain else ET.XMLParser(encoding=self.encoding)


def _record_spans(buffer: bytes, position: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each complete top-level record in ``buffer`` from ``position`` on."""
    while True:
        found = _RECORD_START.search(buffer, position)
        if found is None:
            return
        end = _RECORD_END[found.group(1)].search(buffer, found.end())
        if end is None:
            return
        position = end.end()
        yield found.start(), position


def _split_batches(chunks: Iterator[bytes], document: _Document) -> Iterator[tuple[bytes, int]]:
    """The complete records of each chunk as one run of bytes (with the line it starts on), in order; the rest of
    the file goes to ``document``."""
    buffer = b""
    for chunk in chunks:
        buffer = buffer + chunk if buffer else chunk
        spans = list(_record_spans(buffer, 0))
        if not spans:
            continue
        start, end = spans[0][0], spans[-1][1]
        document.feed(buffer[:start])
        line = document.line
        batch = buffer[start:end]
        document.feed(b"", batch)
        yield batch, line
        buffer = buffer[end:]
    found = _RECORD_START.search(buffer)
    if found is not None:  # a record that never ends: the file was cut off
        document.feed(buffer[: found.start()])
        raise ET.ParseError(f"no end tag for <{found.group(1).decode()}>: the XML ends inside a record")
    document.feed(buffer)
    if not document.started:
        raise _EmptyFile
    document.parser.close()


def _parse(data: bytes, document: _Document, wrap: bool) -> ET.Element:
    parser = document.record_parser()
    if wrap:
        parser.feed(b"<batch>")
    parser.feed(data)
    if wrap:
        parser.feed(b"</batch>")
    return parser.close()


# The elements a PubmedArticle's citation is read from, all before its ``</Article>``; each start tag matched whole
# (quoted attributes may hold ">"), group 3 "/" when it closes itself.
_FIELD_NAMES = (b"PMID", b"ArticleTitle", b"Abstract", b"Language", b"PubDate", b"ArticleDate")
_FIELD_START = re.compile(
    rb"<(" + b"|".join(_FIELD_NAMES) + rb")((?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*)(/?)>"
)
_FIELD_END = {name: re.compile(rb"</" + name + rb"\s*>") for name in _FIELD_NAMES}
_ONCE = (b"PMID", b"ArticleTitle", b"Abstract", b"PubDate")  # more than one: read the record whole


def _cut_fields(batch: bytes, start: int, end: int) -> bytes | None:
    """The elements a ``PubmedArticle`` (``batch[start:end]``) is read from, cut out at their tags as one
    ``FIELDS_TAG`` element; None where the record must be read whole: not a PubmedArticle, no ``</Article>``,
    CDATA, a comment or a processing instruction (none in the DTD), start and end tags that do not balance, a
    field twice or never closed. The rest of the record (authors, MeSH, references, ``PubmedData``) is not parsed."""
    if not batch.startswith(b"<PubmedArticle", start):
        return None
    stop = batch.find(b"</Article>", start, end)
    if stop < 0 or batch.find(b"<MedlineCitation", start, stop) < 0:
        return None
    for mark in (b"!", b"?"):  # a byte search first (memchr), the markup's two only where it is there
        if batch.find(mark, start, end) >= 0 and batch.find(b"<" + mark, start, end) >= 0:
            return None
    if batch.count(b"<", start, end) != 2 * batch.count(b"</", start, end) + batch.count(b"/>", start, end):
        return None  # an element not closed (or a stray "<" or "/>"): the whole record's parse says where
    parts, seen, position = [b"<" + FIELDS_TAG.encode() + b">"], set(), start
    while (found := _FIELD_START.search(batch, position, stop)) is not None:
        name, close = found.group(1), found.end()
        if not found.group(3):
            end_tag = _FIELD_END[name].search(batch, close, stop)
            if end_tag is None:
                return None
            close = end_tag.end()
        if name in _ONCE:
            if name in seen:
                return None
            seen.add(name)
        parts.append(batch[found.start() : close])
        position = close
    parts.append(b"</" + FIELDS_TAG.encode() + b">")
    return b"".join(parts)


def _batch_records(path: Path, batch: bytes, line: int, document: _Document, number: int) -> list:
    """The records of a batch: each PubmedArticle's fields cut out (:func:`_cut_fields`) and parsed at once, any
    other record parsed whole. Where the fields do not parse, every record is parsed whole, one by one, up to the
    one that does not: it ends the list as a :class:`PubmedFileError` (the caller raises it after the others)."""
    spans = list(_record_spans(batch, 0))
    cuts = [_cut_fields(batch, start, end) for start, end in spans]
    fields = [cut for cut in cuts if cut is not None]
    try:
        parsed = iter(_parse(b"".join(fields), document, True) if fields else ())
        elements = [next(parsed) if cut is not None else None for cut in cuts]
    except ET.ParseError:
        elements = [None] * len(spans)
    records = []
    for (start, end), element in zip(spans, elements):
        if element is None:
            try:
                element = _parse(batch[start:end], document, False)
            except ET.ParseError as error:
                at = line + batch.count(b"\n", 0, start) + error.position[0] - 1
                records.append(_broken(path, number + len(records), at, None, error))
                break
        records.append(element)
    return records


def _records(element: ET.Element, number: int, section_labels: bool) -> Iterator[Citation | Deletion | Malformed]:
    if element.tag == DELETE_TAG:
        for pmid in element.iter("PMID"):
            try:
                version = pmid.get("Version")
                yield Deletion(
                    _number(pmid.text, "PMID"), _number(version, "PMID Version") if version else None, number
                )
            except ValueError as error:
                yield Malformed(number, f"DeleteCitation: {error}")
        return
    try:
        yield _citation(element, number, section_labels)
    except ValueError as error:
        yield Malformed(number, f"{'PubmedArticle' if element.tag == FIELDS_TAG else element.tag}: {error}")


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
    document = _Document()
    number = 0
    try:
        try:
            for batch, line in _split_batches(_chunks(raw, path.name.endswith(".gz")), document):
                for element in _batch_records(path, batch, line, document, number):
                    if isinstance(element, PubmedFileError):
                        raise element
                    number += 1
                    yield from _records(element, number, section_labels)
        except ET.ParseError as error:  # the document around the records, or a record cut off
            line, column = getattr(error, "position", None) or (document.line, None)
            raise _broken(path, number, line, column, error) from None
        except _EmptyFile:
            raise PubmedFileError(path, "record 0", "no XML element (an empty file)") from None
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as error:
            raise PubmedFileError(
                path, f"after record {number}", f"corrupt or truncated gzip stream ({error})"
            ) from None
    finally:
        raw.close()
        if reading is not None:  # of the bytes read: the whole file unless it broke off
            reading.sha256 = raw.sha256.hexdigest()
            reading.bytes = raw.bytes


def _broken(path: Path, number: int, line: int, column: int | None, error: ET.ParseError) -> PubmedFileError:
    where = f"after record {number}, XML line {line}" + (f", column {column}" if column is not None else "")
    return PubmedFileError(path, where, f"XML ends or breaks ({_reason(error)})")


def _reason(error: ET.ParseError) -> str:
    return re.sub(r": line \d+, column \d+$", "", str(error))
