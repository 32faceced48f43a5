"""PubMed XML files in the PubMed DTD's format, written from plain records (tests and the scale benchmark):
``PubmedArticle`` records (PMID with its ``Version``, ``ArticleTitle`` with inline markup, an ``Abstract`` of
labelled sections, ``Language``, a ``PubDate``), ``PubmedBookArticle`` records and ``DeleteCitation`` lists, gzipped.

Records come in two shapes: ``text``, the fields read and little else, and ``full``, a MEDLINE record's structure
(authors, grants, chemicals, MeSH, history, references...: values synthetic, drawn from the PMID), where title and
abstract are a minority of the bytes, as in NLM's files (:func:`text_share` measures it).
"""

from __future__ import annotations

import gzip
import random
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


SHAPES = ("full", "text")
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["ch", "sh", "th", "qu", "ng", "st"]
_AGENCIES = ("NIGMS NIH HHS", "NCI NIH HHS", "Wellcome Trust", "Medical Research Council", "NHLBI NIH HHS")
_COUNTRIES = ("United States", "England", "China", "Germany", "Japan", "France", "Canada", "Netherlands", "Italy")
_TYPES = ("Journal Article", "Research Support, N.I.H., Extramural", "Review", "Comparative Study", "Case Reports")
_QUALIFIERS = ("metabolism", "genetics", "pathology", "drug therapy", "epidemiology", "physiology", "diagnosis")


def _pool(size: int, low: int, high: int) -> list[str]:
    rng = random.Random(size)
    return ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(low, high))) for _ in range(size)]


_WORDS = {(2, 4): _pool(6000, 2, 4), (3, 6): _pool(3000, 3, 6)}


def _word(rng: random.Random, low: int = 2, high: int = 4) -> str:
    return rng.choice(_WORDS[low, high])


def _name(rng: random.Random) -> str:
    return _word(rng).capitalize()


def _date(tag: str, rng: random.Random, year: int, attributes: str = "", time: bool = False) -> str:
    clock = f"<Hour>{rng.randint(0, 23)}</Hour><Minute>{rng.randint(0, 59)}</Minute>" if time else ""
    return (
        f"<{tag}{attributes}><Year>{year}</Year><Month>{rng.randint(1, 12)}</Month>"
        f"<Day>{rng.randint(1, 28)}</Day>{clock}</{tag}>"
    )


def _author(rng: random.Random) -> str:
    last, fore = _name(rng), _name(rng)
    orcid = "-".join(f"{rng.randint(0, 9999):04d}" for _ in range(4))
    place = f"{_name(rng)} University, {_name(rng)}, {rng.choice(_COUNTRIES)}"
    return (
        f'<Author ValidYN="Y"><LastName>{last}</LastName><ForeName>{fore} {_name(rng)[0]}</ForeName>'
        f'<Initials>{fore[0]}</Initials><Identifier Source="ORCID">{orcid}</Identifier>'
        f"<AffiliationInfo><Affiliation>Department of {_name(rng)} {_word(rng)}, {place}. "
        f"{last.lower()}@{_word(rng)}.edu.</Affiliation></AffiliationInfo></Author>"
    )


def _reference(rng: random.Random) -> str:
    authors = ", ".join(f"{_name(rng)} {_name(rng)[0]}" for _ in range(rng.randint(1, 6)))
    words = " ".join(_word(rng) for _ in range(rng.randint(6, 14)))
    year, pmid = rng.randint(1960, 2024), rng.randint(1, 39_000_000)
    return (
        f"<Reference><Citation>{authors}. {words.capitalize()}. J {_name(rng)} {_name(rng)}. "
        f"{year};{rng.randint(1, 99)}({rng.randint(1, 12)}):{rng.randint(1, 900)}-{rng.randint(901, 999)}."
        f'</Citation><ArticleIdList><ArticleId IdType="doi">10.{rng.randint(1000, 9999)}/{_word(rng)}.{year}'
        f'</ArticleId><ArticleId IdType="pubmed">{pmid}</ArticleId></ArticleIdList></Reference>'
    )


def _full_parts(record: Record) -> dict[str, str]:
    """The elements of a full record around the fields read (see the module docstring), drawn from its PMID."""
    rng = random.Random(f"{record.pmid}:{record.version}")
    year = record.year or 2001
    journal = f"{_name(rng)} {_name(rng)} {_word(rng)}"
    issn = f"{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}"
    authors = "".join(_author(rng) for _ in range(1 + min(int(rng.expovariate(1 / 5)), 40)))
    grants = "".join(
        f"<Grant><GrantID>R01 {_word(rng).upper()}{rng.randint(10000, 99999)}</GrantID>"
        f"<Agency>{rng.choice(_AGENCIES)}</Agency><Country>{rng.choice(_COUNTRIES)}</Country></Grant>"
        for _ in range(rng.randint(0, 3))
    )
    types = "".join(
        f'<PublicationType UI="D0{rng.randint(10000, 99999)}">{t}</PublicationType>'
        for t in rng.sample(_TYPES, rng.randint(1, 3))
    )
    chemicals = "".join(
        f"<Chemical><RegistryNumber>{rng.randint(0, 99999)}-{rng.randint(10, 99)}-{rng.randint(0, 9)}"
        f'</RegistryNumber><NameOfSubstance UI="D0{rng.randint(10000, 99999)}">{_word(rng, 3, 6)}'
        "</NameOfSubstance></Chemical>"
        for _ in range(rng.randint(0, 6))
    )
    mesh = "".join(
        f'<MeshHeading><DescriptorName UI="D0{rng.randint(10000, 99999)}" MajorTopicYN="N">{_name(rng)} '
        f"{_word(rng)}</DescriptorName>"
        + "".join(
            f'<QualifierName UI="Q000{rng.randint(100, 999)}" MajorTopicYN="{rng.choice("NY")}">'
            f"{rng.choice(_QUALIFIERS)}</QualifierName>"
            for _ in range(rng.randint(0, 2))
        )
        + "</MeshHeading>"
        for _ in range(rng.randint(5, 18))
    )
    keywords = "".join(f'<Keyword MajorTopicYN="N">{_word(rng)} {_word(rng)}</Keyword>' for _ in range(5))
    history = "".join(
        _date("PubMedPubDate", rng, year, f' PubStatus="{status}"', time=status in ("pubmed", "medline", "entrez"))
        for status in ("received", "revised", "accepted", "medline", "pubmed", "entrez")
    )
    ids = (
        f'<ArticleId IdType="pubmed">{record.pmid}</ArticleId><ArticleId IdType="doi">10.{rng.randint(1000, 9999)}'
        f'/{_word(rng)}.{year}.{rng.randint(1, 99999)}</ArticleId><ArticleId IdType="pii">S{rng.randint(10**9, 10**10)}'
        f'</ArticleId><ArticleId IdType="pmc">PMC{rng.randint(10**6, 10**7)}</ArticleId>'
    )
    references = "".join(_reference(rng) for _ in range(int(rng.gauss(25, 8)))) if rng.random() < 0.3 else ""
    return {
        "dates": _date("DateCompleted", rng, year + 1) + _date("DateRevised", rng, year + 2),
        "journal": (
            f'<ISSN IssnType="Electronic">{issn}</ISSN>',
            f"<Title>{journal}</Title><ISOAbbreviation>{journal[:12]}</ISOAbbreviation>",
        ),
        "after_title": (
            f"<Pagination><StartPage>{rng.randint(1, 900)}</StartPage><MedlinePgn>{rng.randint(1, 900)}-"
            f'{rng.randint(901, 999)}</MedlinePgn></Pagination><ELocationID EIdType="doi" ValidYN="Y">10.'
            f"{rng.randint(1000, 9999)}/{_word(rng)}</ELocationID>"
        ),
        "authors": f'<AuthorList CompleteYN="Y">{authors}</AuthorList>',
        "after_languages": (
            (f'<GrantList CompleteYN="Y">{grants}</GrantList>' if grants else "")
            + f"<PublicationTypeList>{types}</PublicationTypeList>"
            + _date("ArticleDate", rng, year, ' DateType="Electronic"')
        ),
        "after_article": (
            f"<MedlineJournalInfo><Country>{rng.choice(_COUNTRIES)}</Country><MedlineTA>{journal[:12]}</MedlineTA>"
            f"<NlmUniqueID>{rng.randint(10**6, 10**7)}</NlmUniqueID><ISSNLinking>{issn}</ISSNLinking>"
            "</MedlineJournalInfo>"
            + (f"<ChemicalList>{chemicals}</ChemicalList>" if chemicals else "")
            + f"<CitationSubset>IM</CitationSubset><MeshHeadingList>{mesh}</MeshHeadingList>"
            + (f'<KeywordList Owner="NOTNLM">{keywords}</KeywordList>' if rng.random() < 0.5 else "")
            + f"<CoiStatement>The authors declare no {_word(rng)} {_word(rng)}.</CoiStatement>"
        ),
        "pubmed_data": (
            f"<PubmedData><History>{history}</History><PublicationStatus>ppublish</PublicationStatus>"
            f"<ArticleIdList>{ids}</ArticleIdList>"
            + (f"<ReferenceList>{references}</ReferenceList>" if references else "")
            + "</PubmedData>"
        ),
    }


_TEXT_PARTS = {
    "dates": "<DateCompleted><Year>2020</Year></DateCompleted>",
    "journal": ('<ISSN IssnType="Print">0000-0000</ISSN>', "<Title>A Journal</Title>"),
    "after_title": "",
    "authors": '<AuthorList CompleteYN="Y"><Author ValidYN="Y"><LastName>Doe</LastName></Author></AuthorList>',
    "after_languages": "",
    "after_article": (
        '<CommentsCorrectionsList><CommentsCorrections RefType="Cites"><PMID Version="1">1</PMID>'
        "</CommentsCorrections></CommentsCorrectionsList>"
    ),
    "pubmed_data": "<PubmedData><PublicationStatus>ppublish</PublicationStatus></PubmedData>",
}


def record_xml(record: Record, shape: str = "text") -> str:
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
    parts = _full_parts(record) if shape == "full" else _TEXT_PARTS
    issn, journal = parts["journal"]
    return (
        '<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">'
        f"{pmid}{parts['dates']}"
        f'<Article PubModel="Print"><Journal>{issn}'
        f'<JournalIssue CitedMedium="Print"><Volume>1</Volume><PubDate>{date}</PubDate></JournalIssue>'
        f"{journal}</Journal>"
        f"<ArticleTitle>{record.title}</ArticleTitle>{parts['after_title']}{abstract}{parts['authors']}"
        f"{languages}{parts['after_languages']}</Article>{parts['after_article']}"
        f"</MedlineCitation>{parts['pubmed_data']}</PubmedArticle>\n"
    )


def text_share(records: list[Record], shape: str) -> float:
    """The share of the records' XML bytes that their ``ArticleTitle`` and ``Abstract`` elements take."""
    total = fields = 0
    for record in records:
        xml = record_xml(record, shape)
        total += len(xml.encode())
        for tag in ("ArticleTitle", "Abstract"):
            start, end = xml.find(f"<{tag}>"), xml.find(f"</{tag}>")
            fields += len(xml[start : end + len(tag) + 3].encode()) if start >= 0 else 0
    return fields / total if total else 0.0


def delete_xml(pmids) -> str:
    return "<DeleteCitation>" + "".join(f'<PMID Version="1">{p}</PMID>' for p in pmids) + "</DeleteCitation>\n"


def pubmed_document(records: list[Record], deletions=(), shape: str = "text") -> str:
    body = "".join(record_xml(r, shape) for r in records)
    return HEADER + body + (delete_xml(deletions) if len(deletions) else "") + FOOTER


def write_pubmed_file(
    path: str | Path, records: list[Record], deletions=(), truncate_at: float | None = None, shape: str = "text"
) -> Path:
    """Write ``records`` (then a ``DeleteCitation`` of ``deletions``) to ``path``, gzip-compressed when it ends in
    ``.gz``; ``truncate_at`` (a fraction) cuts the written file there, as an interrupted download does; ``shape``:
    the records' shape (module docstring)."""
    path = Path(path)
    data = pubmed_document(records, deletions, shape).encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    if truncate_at is not None:
        data = data[: int(len(data) * truncate_at)]
    path.write_bytes(data)
    return path
