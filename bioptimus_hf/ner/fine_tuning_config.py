"""The model and precision flags of a fine-tuning command (``run_ner.py``, ``run_blurb.py``): the one place they
are set.

``FineTuningModelArguments`` is ``run_blurb.py``'s model dataclass as it stands and the base of ``run_ner.py``'s,
which adds its own flags after these. The precision flags are read by
:func:`bioptimus_hf.utils.hardware.resolve_bf16`, which owns what they do.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FineTuningModelArguments:
    model_name_or_path: str = field(metadata={"help": "Pretrained model directory or Hub id (e.g. a release dir)."})
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer, if not the model's."})
    model_name: str | None = field(
        default=None,
        metadata={
            "help": "Name for results tables and, where the run writes one, the model-index (default: the path's "
            "basename)."
        },
    )
    ignore_mismatched_sizes: bool = field(
        default=False, metadata={"help": "Allow loading a checkpoint whose classification head has another label set."}
    )
    save_model: bool = field(default=True, metadata={"help": "Save each seed's fine-tuned model in seed_<s>/."})
    bf16_if_supported: bool = field(
        default=False,
        metadata={
            "help": "Train and predict in bf16 (autocast) where the device computes it natively (CPU with AMX or "
            "AVX512-BF16, Ampere+ GPU), else in float32: safe on any machine."
        },
    )
    allow_emulated_bf16: bool = field(
        default=False,
        metadata={
            "help": "Use bf16 even where the device only emulates it (same numerics, slower): to check results. "
            "Default: bf16 falls back to float32 there, with a warning."
        },
    )
