"""``bioptimus-remove-layers``: a model with its top layers removed (Tinn et al., 2023, Table 7), the cheap
alternative to distillation: fine-tune it directly.

    bioptimus-remove-layers --model_name_or_path outputs/run/releases/v0.4 --num_layers_to_remove 3 \\
        --output_dir out/v0.4-top3-removed      # + layer_removal.json

The model is loaded with the class its ``config.json`` names (``BertForMaskedLM``, ``BertModel``...), so heads
that exist are kept; the embeddings, the kept layers and the heads are copied bit for bit
(:func:`bioptimus_hf.distillation.student.keep_layers`). The result loads with ``from_pretrained``.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..utils.cli import exit_on_bad_input
from ..utils.files import write_json_atomic, writing_directory
from .config_parser import parse_args


REPORT_NAME = "layer_removal.json"
logger = logging.getLogger(__name__)


@dataclass
class RemoveLayersArguments:
    model_name_or_path: str = field(metadata={"help": "The model (a release directory, a checkpoint or a Hub id)."})
    output_dir: str = field(metadata={"help": "Where the shortened model, its tokenizer and layer_removal.json go."})
    num_layers_to_remove: int | None = field(
        default=None, metadata={"help": "How many top layers to remove (Tinn et al.'s Table 7)."}
    )
    keep_layers: list[int] | None = field(
        default=None, metadata={"help": "Or: exactly which layers (0-based) to keep, bottom to top."}
    )
    overwrite_output_dir: bool = field(default=False, metadata={"help": "Replace a model already in output_dir."})

    def __post_init__(self):
        if (self.num_layers_to_remove is None) == (self.keep_layers is None):
            raise ValueError("give exactly one of --num_layers_to_remove K and --keep_layers L [L ...]")
        if self.num_layers_to_remove is not None and self.num_layers_to_remove < 1:
            raise ValueError(f"--num_layers_to_remove {self.num_layers_to_remove} must be >= 1")


def load_with_own_class(name_or_path: str):
    """The model as the class its configuration names (falling back to ``AutoModel``)."""
    import transformers
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(name_or_path)
    names = config.architectures or []
    model_class = getattr(transformers, names[0], None) if names else None
    model, loading = (model_class or AutoModel).from_pretrained(name_or_path, output_loading_info=True)
    if loading.get("missing_keys"):
        logger.warning(
            "%s: weights not in the checkpoint were initialised at random: %s",
            name_or_path,
            sorted(loading["missing_keys"])[:5],
        )
    return model


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, write the shortened model and return the report."""
    from ..distillation.student import keep_layers, parameter_count

    (args,) = parse_args((RemoveLayersArguments,), argv, description=__doc__)
    output_dir = Path(args.output_dir)
    if (output_dir / "config.json").exists() and not args.overwrite_output_dir:
        raise FileExistsError(f"{output_dir} already holds a model; pass --overwrite_output_dir to replace it")
    model = load_with_own_class(args.model_name_or_path)
    depth = model.config.num_hidden_layers
    if args.keep_layers is not None:
        kept = list(args.keep_layers)
    else:
        if args.num_layers_to_remove >= depth:
            raise ValueError(
                f"--num_layers_to_remove {args.num_layers_to_remove}: the model has {depth} layers, "
                "at least one must stay"
            )
        kept = list(range(depth - args.num_layers_to_remove))
    shortened = keep_layers(model, kept)
    report = {
        "source": os.path.basename(os.path.normpath(args.model_name_or_path)),
        "architecture": type(shortened).__name__,
        "source_layers": depth,
        "kept_layers": kept,
        "removed_layers": [layer for layer in range(depth) if layer not in kept],
        "source_parameters": parameter_count(model),
        "parameters": parameter_count(shortened),
    }
    # All or nothing: an interrupted command leaves the previous model in output_dir (or none), never a mix.
    with writing_directory(output_dir) as staging:
        shortened.save_pretrained(staging)
        try:
            from transformers import AutoTokenizer

            AutoTokenizer.from_pretrained(args.model_name_or_path).save_pretrained(staging)
        except (OSError, ValueError) as error:
            logger.warning("%s: no tokenizer copied (%s)", args.model_name_or_path, error)
        write_json_atomic(staging / REPORT_NAME, report)
    print(json.dumps(report, indent=2))
    return report


@exit_on_bad_input(ValueError, OSError)  # FileNotFoundError, FileExistsError: OSErrors
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
