"""``bioptimus tag``'s run: raw text tagged by a model fine-tuned by ``bioptimus ner`` (:class:`.tagger.NerTagger`)
into JSON lines, one per input line, ``{"line": n, "entities": [...]}``. The input file is read lazily and results
written as they are done, in input order, so memory stays bounded; the output goes to ``<output_file>.partial``,
renamed to ``output_file`` once every line is tagged.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Iterator

from ..utils.allocator import retain_freed_memory
from ..utils.errors import bad_input
from .tagger import NerTagger
from .tagger_config import TaggingArguments


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


def run_tagging(args: TaggingArguments) -> None:
    """Tag ``args.text`` or every line of ``args.input_file`` into JSON lines (``args.output_file`` or stdout). Bad
    input raises :class:`~bioptimus_hf.utils.errors.BadInput` naming the flag, file or line."""
    with bad_input():
        if args.input_file and not os.path.isfile(args.input_file):
            raise FileNotFoundError(f"--input_file {args.input_file}: no such file")
        try:
            tagger = NerTagger(
                args.model_name_or_path,
                args.max_seq_length,
                args.window_stride,
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
        with bad_input():
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
