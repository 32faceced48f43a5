"""The settings of a vocabulary's training (``bioptimus train-tokenizer``, a study's vocabulary)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .vocabulary_extension import VOCABULARY_MODES


@dataclass
class TokenizerTrainingArguments:
    train_files: list[str] = field(
        metadata={
            "help": "The corpus: text files (one sentence or document a line; .gz ok) or a prepared corpus "
            "directory (bioptimus prepare-corpus)."
        }
    )
    base_tokenizer: str = field(metadata={"help": "Base tokenizer (path or Hub id) whose pipeline is kept."})
    output_dir: str = field(metadata={"help": "Where the tokenizer and coverage_report.json are written."})
    vocabulary_mode: str = field(
        default="replace",
        metadata={
            "help": "replace: a new vocabulary of --vocab_size entries in place of the base's; extend: the "
            "base vocabulary kept (strings, ids, pipeline) with domain tokens appended.",
            "choices": list(VOCABULARY_MODES),
        },
    )
    vocab_size: str = field(
        default="30522",
        metadata={
            "help": "Vocabulary size, special tokens included (extend: the total, base included). 'auto' "
            "(extend only): grow by --auto_vocab_step until tokens per word improve by less than "
            "--auto_vocab_threshold."
        },
    )
    candidate_vocab_size: int | None = field(
        default=None,
        metadata={
            "help": "extend: size of the corpus vocabulary the added tokens are drawn from (default "
            "--vocab_size; with auto, twice the base's)."
        },
    )
    auto_vocab_step: int | None = field(
        default=None, metadata={"help": "--vocab_size auto: tokens added per step (default a tenth of the base's)."}
    )
    auto_vocab_threshold: float = field(
        default=0.01,
        metadata={"help": "--vocab_size auto: stop when a step lowers tokens per word by less than this fraction."},
    )
    min_frequency: int | None = field(
        default=None,
        metadata={"help": "Minimum pair frequency for a merge (WordPiece and BPE; default 2). Not for Unigram bases."},
    )
    limit_alphabet: int | None = field(
        default=None,
        metadata={
            "help": "Maximum number of initial characters kept (WordPiece and SentencePiece BPE; default 1000). "
            "Not for byte-level BPE (256 bytes, all kept) or Unigram (every character kept)."
        },
    )
    coverage_sample_lines: int = field(default=2000, metadata={"help": "Corpus lines sampled for the report."})
    heldout_files: list[str] | None = field(
        default=None, metadata={"help": "Held-out text files measured in coverage_report.json besides the corpus."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the coverage sample."})

    def __post_init__(self):
        self.vocab_size = str(self.vocab_size)  # a number from a config or a caller, or "auto"
        if self.vocab_size != "auto" and not self.vocab_size.isdigit():
            raise ValueError(f"--vocab_size {self.vocab_size!r} is neither a number nor auto")
        if self.vocab_size == "auto" and self.vocabulary_mode != "extend":
            raise ValueError("--vocab_size auto grows an extended vocabulary: it needs --vocabulary_mode extend")
        if self.auto_vocab_step is not None and self.auto_vocab_step <= 0:
            raise ValueError(f"--auto_vocab_step {self.auto_vocab_step} must be positive")
        if self.auto_vocab_threshold <= 0:
            raise ValueError(
                f"--auto_vocab_threshold {self.auto_vocab_threshold} must be positive (a relative improvement)"
            )
