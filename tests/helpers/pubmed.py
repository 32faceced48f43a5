"""NLM-style PubMed files for the prepare-corpus tests: two baseline files, an update file, a truncated file, and
the corpus they must give (``EXPECTED_TEXTS``, by PMID); a prepared corpus of shared-corpus sentences."""

from pathlib import Path
from xml.sax.saxutils import escape

from bioptimus_hf.corpus.prepare import prepare_corpus
from bioptimus_hf.corpus.prepare_config import PrepareCorpusArguments
from bioptimus_hf.testing.pubmed_files import Record, write_pubmed_file

from . import corpus_lines


STRUCTURED = [
    ("BACKGROUND", "BACKGROUND", "Sepsis is <i>common</i>."),
    ("METHODS", "METHODS", "We  measured\n  lactate in 40 patients."),
    ("RESULTS", "RESULTS", "Lactate rose by 2 mmol/l (p&lt;0.05)."),
    (None, None, "No label here."),
]
BASELINE_1 = [
    Record(1, "Lactate in <i>sepsis</i>: a cohort.", STRUCTURED, year=1999),
    Record(
        2,
        "Fibres of α-synuclein in Parkinson's disease",
        [(None, None, "H<sub>2</sub>O and Ca<sup>2+</sup> in façade µg.")],
    ),
    Record(3, "A title without an abstract.", []),
    Record(
        4,
        "Étude des reins.",
        [(None, None, "Les reins filtrent le sang.")],
        languages=("fre",),
        medline_date="1975 Jun-Jul",
        year=None,
    ),
    Record(5, "Old title of five.", [(None, None, "Old abstract of five.")]),
    Record(6, "Retracted paper.", [(None, None, "This will be deleted.")]),
    Record("abc", "A malformed record.", [(None, None, "Its PMID is not a number.")]),
]
BASELINE_2 = [
    Record(7, "Seven.", [(None, None, "Abstract seven. It has two sentences.")], languages=("eng", "ger")),
    Record(8, "Eight, first version.", [(None, None, "Abstract eight v1.")]),
    Record(9, "Nine.", [(None, None, "Abstract nine.")]),
    Record(10, "A book chapter.", [("INTRODUCTION", None, "Books are citations too.")], book=True, year=2010),
]
UPDATE = [
    Record(5, "New title of five.", [(None, None, "New abstract of five.")]),
    Record(8, "Eight, second version.", [(None, None, "Abstract eight v2.")], version=2),
]
UPDATE_DELETIONS = [6, 999]
# The truncated file: enough records that the parser reads some before the cut.
TRUNCATED = [
    Record(100 + i, f"Record {100 + i}.", [(None, None, f"Abstract of record {100 + i}. " * 20)]) for i in range(400)
]

EXPECTED_TEXTS = {
    1: "Lactate in sepsis: a cohort. BACKGROUND: Sepsis is common. METHODS: We measured lactate in 40 patients. "
    "RESULTS: Lactate rose by 2 mmol/l (p<0.05). No label here.",
    2: "Fibres of α-synuclein in Parkinson's disease H2O and Ca2+ in façade µg.",
    4: "Étude des reins. Les reins filtrent le sang.",
    5: "New title of five. New abstract of five.",
    7: "Seven. Abstract seven. It has two sentences.",
    8: "Eight, second version. Abstract eight v2.",
    9: "Nine. Abstract nine.",
    10: "A book chapter. INTRODUCTION: Books are citations too.",
}
EXPECTED_YEARS = {1: 1999, 2: 2001, 4: 1975, 5: 2001, 7: 2001, 8: 2001, 9: 2001, 10: 2010}


def write_pubmed_fixtures(directory: Path, truncated: bool = True) -> list[Path]:
    """The fixture files (names in NLM's numbering; the second baseline file plain XML), returned unsorted."""
    directory.mkdir(parents=True, exist_ok=True)
    files = [
        write_pubmed_file(directory / "pubmed25n0003.xml.gz", UPDATE, deletions=UPDATE_DELETIONS),
        write_pubmed_file(directory / "pubmed25n0001.xml.gz", BASELINE_1),
        write_pubmed_file(directory / "pubmed25n0002.xml", BASELINE_2),
    ]
    if truncated:
        files.append(write_pubmed_file(directory / "pubmed25n0004.xml.gz", TRUNCATED, truncate_at=0.6))
    return files


def write_prepared_corpus(directory: Path, citations: int = 200, files: int = 2, **settings) -> Path:
    """``directory/prepared``: ``citations`` citations of three shared-corpus lines each (a title, a two-sentence
    abstract) in ``files`` PubMed files, prepared in this process."""
    lines = [escape(line) for line in corpus_lines(3 * citations)]  # plain text in XML
    records = [
        Record(i + 1, lines[3 * i], [(None, None, f"{lines[3 * i + 1]} {lines[3 * i + 2]}")]) for i in range(citations)
    ]
    per_file = -(-citations // files)
    inputs = [
        write_pubmed_file(directory / f"pubmed25n{f + 1:04d}.xml.gz", records[f * per_file : (f + 1) * per_file])
        for f in range(files)
    ]
    output = directory / "prepared"
    settings = {"num_workers": 1, "disable_tqdm": True, **settings}
    prepare_corpus(PrepareCorpusArguments(input_files=[str(p) for p in inputs], output_dir=str(output), **settings))
    return output
