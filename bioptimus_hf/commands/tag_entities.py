"""``bioptimus-ner-tag``: tag entities in raw text with a model fine-tuned by run_ner.py (JSON lines out).

    bioptimus-ner-tag --model out/seed_1 --text "Mutations in BRCA1 cause breast cancer."
    bioptimus-ner-tag --model out/seed_1 --input_file abstracts.txt --output_file entities.jsonl
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

from ..ner.tagger import NerTagger
from .config_parser import parse_args


@dataclass
class TagArguments:
    model: str = field(metadata={"help": "Directory of a fine-tuned model (e.g. <output_dir>/seed_1)."})
    text: str | None = field(default=None, metadata={"help": "One text to tag."})
    input_file: str | None = field(default=None, metadata={"help": "A file of texts, one per line (blank lines kept)."})
    output_file: str | None = field(default=None, metadata={"help": "Write JSON lines here (default: stdout)."})
    max_seq_length: int = field(default=512)
    stride: int = field(default=32)
    batch_size: int = field(default=32)

    def __post_init__(self):
        if (self.text is None) == (self.input_file is None):
            raise ValueError("give exactly one of --text and --input_file")


def main(argv: list[str] | None = None) -> None:
    (args,) = parse_args((TagArguments,), argv, description=__doc__)
    if args.input_file:
        try:
            with open(args.input_file, encoding="utf-8") as handle:
                texts = [line.rstrip("\n") for line in handle]
        except (OSError, UnicodeDecodeError) as error:
            raise SystemExit(f"error: --input_file {args.input_file}: {error}") from None
    else:
        texts = [args.text]
    tagger = NerTagger(args.model, args.max_seq_length, args.stride, args.batch_size)
    entities = tagger(texts, progress=args.input_file is not None)
    out = open(args.output_file, "w", encoding="utf-8") if args.output_file else sys.stdout
    try:
        for line_number, found in enumerate(entities, start=1):
            out.write(json.dumps({"line": line_number, "entities": found}, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    main()
