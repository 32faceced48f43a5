"""A model with its top layers removed (Tinn et al., 2023, Table 7), the cheap alternative to distillation: fine-tune
it directly. Loaded with the class its ``config.json`` names, so its heads are kept; embeddings, kept layers and
heads are copied bit for bit (:func:`bioptimus_hf.distillation.student.keep_layers`)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from ..utils.files import write_json_atomic, writing_directory
from .layer_removal_config import RemoveLayersArguments
from .student import keep_layers, parameter_count


REPORT_NAME = "layer_removal.json"
logger = logging.getLogger(__name__)


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


def remove_top_layers(args: RemoveLayersArguments) -> dict:
    """Write the model without its top layers to ``args.output_dir`` (all at once, with its tokenizer and
    ``layer_removal.json``), print and return the report."""
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
