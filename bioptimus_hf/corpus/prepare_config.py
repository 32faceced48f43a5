"""Flags of ``bioptimus prepare-corpus`` (``PrepareCorpusArguments``): inputs, filters, the text unit, workers."""

from __future__ import annotations

from dataclasses import dataclass, field


# What one output row holds: a citation's title and abstract, or one sentence of it (qik-find's sentence split).
TEXT_UNITS = ("abstract", "sentence")
# What a malformed record or a file that breaks off does: skipped, the corpus finished without it, and the run ends
# with status 1 and a line saying what was lost (report, the default); the same with status 0 (skip: asked for); or
# the run refused at the first one (fail).
ON_ERROR = ("report", "skip", "fail")
# Why a current citation is left out of the corpus (the manifest's ``filtered`` counts, in the order checked).
FILTER_REASONS = ("no_abstract", "language", "too_short")


@dataclass
class PrepareCorpusArguments:
    input_files: list[str] = field(
        metadata={
            "help": "NLM PubMed XML files (pubmed<yy>n<NNNN>.xml.gz, baseline and updates; .xml too), applied in "
            "the order of their names: a later version of a PMID replaces an earlier one, DeleteCitation removes it."
        }
    )
    output_dir: str = field(metadata={"help": "Where the Parquet shards and manifest.json are written."})
    text_unit: str = field(
        default="abstract",
        metadata={
            "help": "abstract: one row per citation, its title then its abstract; sentence: one row per sentence "
            "of that text (qik-find's sentence split), in order, with its index.",
            "choices": list(TEXT_UNITS),
        },
    )
    require_abstract: bool = field(default=True, metadata={"help": "Leave out citations without an abstract."})
    min_abstract_chars: int = field(
        default=0, metadata={"help": "Leave out citations whose abstract has fewer characters (0: keep all)."}
    )
    languages: list[str] | None = field(
        default=None,
        metadata={
            "help": "Keep only citations in one of these languages (PubMed's codes: eng, fre...); all if unset."
        },
    )
    section_labels: bool = field(
        default=True,
        metadata={"help": "Put a structured abstract's section label before its text ('METHODS: ...')."},
    )
    shuffle_rows: bool = field(
        default=True,
        metadata={
            "help": "Write each shard's citations in a seeded random order (a streaming run then needs no "
            "shuffle buffer, and resumes exactly; docs/pubmed.md)."
        },
    )
    seed: int = field(default=42, metadata={"help": "Seed of the rows' order within each shard."})
    on_error: str = field(
        default="report",
        metadata={
            "help": "A malformed record, or a file that breaks off (truncated .gz, empty): report (skip it, finish "
            "the corpus, then end with exit status 1 and a last line saying how many and where), skip (the same, "
            "exit status 0: the loss accepted) or fail (stop at the first). Skipped records are listed with file "
            "and position in manifest.json; a broken file keeps the records before the break.",
            "choices": list(ON_ERROR),
        },
    )
    num_workers: int | None = field(
        default=None,
        metadata={"help": "Processes parsing and writing files in parallel (default: the CPUs, 1 = none)."},
    )
    keep_intermediate: bool = field(
        default=True,
        metadata={
            "help": "Keep each input's parsed records under DIR/.prepare/, so that a rerun with more update files "
            "parses only those and rewrites only the shards they change."
        },
    )
    disable_tqdm: bool = field(default=False, metadata={"help": "No progress bar."})

    def __post_init__(self):
        if self.text_unit not in TEXT_UNITS:
            raise ValueError(f"--text_unit must be one of {', '.join(TEXT_UNITS)}, got {self.text_unit!r}")
        if self.on_error not in ON_ERROR:
            raise ValueError(f"--on_error must be one of {', '.join(ON_ERROR)}, got {self.on_error!r}")
        if self.min_abstract_chars < 0:
            raise ValueError(f"--min_abstract_chars must be >= 0, got {self.min_abstract_chars}")
        if self.num_workers is not None and self.num_workers < 1:
            raise ValueError(f"--num_workers must be >= 1, got {self.num_workers}")
        if not self.input_files:
            raise ValueError("--input_files: give at least one PubMed XML file")
