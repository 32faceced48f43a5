"""PubMed XML files in the PubMed DTD's format, written from plain records (tests and the scale benchmark).

What NLM's baseline and update files hold, in small: ``PubmedArticle`` records (PMID with its ``Version``,
``ArticleTitle`` with inline markup, an ``Abstract`` of ``AbstractText`` sections with ``Label`` and
``NlmCategory``, ``Language``, a ``PubDate`` with a ``Year`` or a ``MedlineDate``), ``PubmedBookArticle`` records
and ``DeleteCitation`` lists, gzip-compressed.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr


HEADER = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
    "<PubmedArticleSet>\n"
)
FOOTER = "</PubmedArticleSet>\n"


@dataclass
class Record:
    """One citation. Title and section texts are XML fragments (inline markup such as ``<i>`` kept); a section
    is ``(label, category, text)`` with ``None`` for an absent label or category."""

    pmid: int | str
    title: str
    sections: list[tuple[str | None, str | None, str]] = field(default_factory=list)
    version: int | str = 1
    languages: tuple[str, ...] = ("eng",)
    year: int | None = 2001
    medline_date: str | None = None
    book: bool = False


def record_xml(record: Record) -> str:
    sections = "".join(
        "<AbstractText"
        + (f" Label={quoteattr(label)}" if label else "")
        + (f" NlmCategory={quoteattr(category)}" if category else "")
        + f">{text}</AbstractText>"
        for label, category, text in record.sections
    )
    abstract = (
        f"<Abstract>{sections}<CopyrightInformation>© the authors</CopyrightInformation></Abstract>"
        if sections
        else ""
    )
    date = (
        f"<MedlineDate>{escape(record.medline_date)}</MedlineDate>"
        if record.medline_date
        else (f"<Year>{record.year}</Year><Month>Jun</Month>" if record.year else "")
    )
    languages = "".join(f"<Language>{language}</Language>" for language in record.languages)
    pmid = f'<PMID Version="{record.version}">{record.pmid}</PMID>'
    if record.book:
        return (
            "<PubmedBookArticle><BookDocument>"
            f"{pmid}<Book><BookTitle>{record.title}</BookTitle><PubDate>{date}</PubDate></Book>"
            f"{languages}{abstract}</BookDocument></PubmedBookArticle>\n"
        )
    return (
        '<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">'
        f"{pmid}<DateCompleted><Year>2020</Year></DateCompleted>"
        '<Article PubModel="Print"><Journal><ISSN IssnType="Print">0000-0000</ISSN>'
        f'<JournalIssue CitedMedium="Print"><Volume>1</Volume><PubDate>{date}</PubDate></JournalIssue>'
        "<Title>A Journal</Title></Journal>"
        f"<ArticleTitle>{record.title}</ArticleTitle>{abstract}"
        f'<AuthorList CompleteYN="Y"><Author ValidYN="Y"><LastName>Doe</LastName></Author></AuthorList>'
        f"{languages}</Article>"
        '<CommentsCorrectionsList><CommentsCorrections RefType="Cites"><PMID Version="1">1</PMID>'
        "</CommentsCorrections></CommentsCorrectionsList>"
        "</MedlineCitation><PubmedData><PublicationStatus>ppublish</PublicationStatus></PubmedData></PubmedArticle>\n"
    )


def delete_xml(pmids) -> str:
    return "<DeleteCitation>" + "".join(f'<PMID Version="1">{p}</PMID>' for p in pmids) + "</DeleteCitation>\n"


def pubmed_document(records: list[Record], deletions=()) -> str:
    body = "".join(record_xml(r) for r in records)
    return HEADER + body + (delete_xml(deletions) if len(deletions) else "") + FOOTER


def write_pubmed_file(path: str | Path, records: list[Record], deletions=(), truncate_at: float | None = None) -> Path:
    """Write ``records`` (then a ``DeleteCitation`` of ``deletions``) to ``path``, gzip-compressed when it ends in
    ``.gz``; ``truncate_at`` (a fraction) cuts the written file there, as an interrupted download does."""
    path = Path(path)
    data = pubmed_document(records, deletions).encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    if truncate_at is not None:
        data = data[: int(len(data) * truncate_at)]
    path.write_bytes(data)
    return path
