"""``bioptimus tag``'s flags (:class:`TaggingArguments`) and the precisions a tagger runs in (:data:`PRECISIONS`; what
``auto`` picks is :mod:`.tagger`'s)."""

from __future__ import annotations

from dataclasses import dataclass, field


# "auto": bf16 where the device has it natively, else float32. "bf16": weights cast to bfloat16.
# "bf16-autocast": float32 weights, matrix products in bf16 (torch.autocast). Forcing a bf16 mode on
# a device without native bf16 works (torch emulates it) but is slower than float32.
PRECISIONS = ("auto", "float32", "bf16", "bf16-autocast")


@dataclass
class TaggingArguments:
    """What to tag with which fine-tuned model, where the JSON lines go, and how the model runs."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A fine-tuned model: a directory (e.g. <output_dir>/seed_1) or a Hub id."}
    )
    revision: str | None = field(
        default=None, metadata={"help": "Branch, tag or commit of the model (Hub ids), for every from_pretrained."}
    )
    text: str | None = field(default=None, metadata={"help": "One text to tag."})
    input_file: str | None = field(
        default=None, metadata={"help": "A file of texts, one per line (blank lines kept)."}
    )
    output_file: str | None = field(default=None, metadata={"help": "Write JSON lines here (default: stdout)."})
    max_seq_length: int = field(default=512, metadata={"help": "Window size in sub-tokens (at most the model's)."})
    window_stride: int = field(
        default=32, metadata={"help": "Maximum overlap, in sub-tokens, of consecutive windows."}
    )
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
        if self.model_name_or_path is None:
            raise ValueError("give --model_name_or_path (a fine-tuned model directory or Hub id)")
        if (self.text is None) == (self.input_file is None):
            raise ValueError("give exactly one of --text and --input_file")
