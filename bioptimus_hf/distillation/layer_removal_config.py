"""The settings of a top-layer removal (``bioptimus remove-layers``): the model, which layers stay, where it goes."""

from __future__ import annotations

from dataclasses import dataclass, field


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
