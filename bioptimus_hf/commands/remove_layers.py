"""``bioptimus-remove-layers``: a model with its top layers removed (Tinn et al., 2023, Table 7), the cheap
alternative to distillation: fine-tune it directly.

    bioptimus-remove-layers --model_name_or_path outputs/run/releases/v0.4 --num_layers_to_remove 3 \\
        --output_dir out/v0.4-top3-removed      # + layer_removal.json

The model is loaded with the class its ``config.json`` names (``BertForMaskedLM``, ``BertModel``...), so heads
that exist are kept; the embeddings, the kept layers and the heads are copied bit for bit
(:func:`bioptimus_hf.distillation.student.keep_layers`). The result loads with ``from_pretrained``.
"""

from __future__ import annotations

from ..distillation.layer_removal_config import RemoveLayersArguments
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, write the shortened model and return the report
    (:func:`bioptimus_hf.distillation.layer_removal.remove_top_layers`)."""
    (args,) = parse_args((RemoveLayersArguments,), argv, description=__doc__)
    from ..distillation.layer_removal import remove_top_layers  # models load only to run

    return remove_top_layers(args)


@exit_on_bad_input(ValueError, OSError)  # FileNotFoundError, FileExistsError: OSErrors
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
