"""``bioptimus tag``: tag entities in raw text with a model fine-tuned by run_ner.py (JSON lines out).

    bioptimus tag --model_name_or_path out/seed_1 --text "Mutations in BRCA1 cause breast cancer."
    bioptimus tag --model_name_or_path acme/ner-model --revision v1 --input_file abstracts.txt \
        --output_file entities.jsonl

One line per input line: ``{"line": n, "entities": [...]}``, each entity in the shape of transformers'
token-classification pipeline (``entity_group``, ``score``, ``word``, ``start``, ``end``; ner/tagger.py).

The input file is read lazily and results are written as they are done, in input order, so memory
stays bounded whatever the file size. The output goes to ``<output_file>.partial`` and is renamed to
``output_file`` only when every line is tagged; an interrupted run leaves the lines done so far there.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Iterator

from ..ner.tagger import PRECISIONS, NerTagger
from ..utils.allocator import retain_freed_memory
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args


@dataclass
class TagArguments:
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A fine-tuned model: a directory (e.g. <output_dir>/seed_1) or a Hub id."}
    )
    revision: str | None = field(
        default=None, metadata={"help": "Branch, tag or commit of the model (Hub ids), for every from_pretrained."}
    )
    model: str | None = field(default=None, metadata={"help": "Deprecated spelling of --model_name_or_path."})
    text: str | None = field(default=None, metadata={"help": "One text to tag."})
    input_file: str | None = field(
        default=None, metadata={"help": "A file of texts, one per line (blank lines kept)."}
    )
    output_file: str | None = field(default=None, metadata={"help": "Write JSON lines here (default: stdout)."})
    max_seq_length: int = field(default=512)
    stride: int = field(default=32)
    batch_size: int = field(default=32, metadata={"help": "Windows per forward pass."})
    chunk_size: int = field(default=256, metadata={"help": "Texts read, sorted by length and tagged together."})
    precision: str = field(
        default="auto",
        metadata={
            "help": "auto (bf16 where the device has it natively, else float32), float32, bf16, bf16-autocast.",
            "choices": list(PRECISIONS),
        },
    )
    retain_freed_memory: bool = field(
        default=True,
        metadata={
            "help": "On a CPU with glibc, keep freed memory in the process and serve large activations from "
            "the heap instead of mapping and page-faulting them every batch (7-9 %% faster tagging "
            "measured; docs/ner.md). The CLI's process only: NerTagger itself leaves malloc alone."
        },
    )

    def __post_init__(self):
        if self.model is not None:
            if self.model_name_or_path is not None:
                raise ValueError("give --model_name_or_path only (--model is its deprecated spelling)")
            warnings.warn("--model is deprecated: use --model_name_or_path", FutureWarning, stacklevel=2)
            self.model_name_or_path, self.model = self.model, None
        if self.model_name_or_path is None:
            raise ValueError("give --model_name_or_path (a fine-tuned model directory or Hub id)")
        if (self.text is None) == (self.input_file is None):
            raise ValueError("give exactly one of --text and --input_file")


class _Lines:
    """The lines of a file, read lazily; remembers the line number for error messages."""

    def __init__(self, path: str):
        self.path, self.line_number = path, 0

    def __iter__(self) -> Iterator[str]:
        # bytes, decoded line by line: a text-mode reader decodes ahead in blocks, so its errors name no line
        with open(self.path, "rb") as handle:
            for raw in handle:
                line = raw.decode("utf-8")
                self.line_number += 1
                yield line.rstrip("\n").removesuffix("\r")


def main(argv: list[str] | None = None) -> None:
    (args,) = parse_args((TagArguments,), argv, description=__doc__)
    with exit_on_bad_input():
        if args.input_file and not os.path.isfile(args.input_file):
            raise FileNotFoundError(f"--input_file {args.input_file}: no such file")
        try:
            tagger = NerTagger(
                args.model_name_or_path,
                args.max_seq_length,
                args.stride,
                args.batch_size,
                precision=args.precision,
                chunk_size=args.chunk_size,
                revision=args.revision,
            )
        except OSError as error:  # transformers' "not a folder, not on the Hub (at that revision)", with advice lines
            model = args.model_name_or_path + (f" --revision {args.revision}" if args.revision else "")
            raise ValueError(f"--model_name_or_path {model}: {str(error).splitlines()[0]}") from None
    lines = _Lines(args.input_file) if args.input_file else None
    if args.retain_freed_memory and tagger.device.type == "cpu":
        retain_freed_memory()  # a no-op, saying so, where the C library is not glibc
    partial = f"{args.output_file}.partial" if args.output_file else None
    out = open(partial, "w", encoding="utf-8") if partial else sys.stdout
    try:
        with exit_on_bad_input():
            try:
                results = tagger.tag_stream(lines, progress=True) if lines else iter([tagger(args.text)])
                for line_number, found in enumerate(results, start=1):
                    out.write(json.dumps({"line": line_number, "entities": found}, ensure_ascii=False) + "\n")
            except UnicodeDecodeError as error:  # named with its file and line
                raise ValueError(f"--input_file {args.input_file}, line {lines.line_number + 1}: {error}") from None
    finally:
        if out is not sys.stdout:
            out.close()
    if partial:
        os.replace(partial, args.output_file)


if __name__ == "__main__":
    main()
