"""``bioptimus pretrain`` (``python run_pretraining.py``): continued masked-LM pre-training through the BIOptimus
curriculum, releasing a model per phase.

Modelled on transformers' examples/pytorch/language-modeling/run_mlm.py:

    bioptimus pretrain configs/demo_minilm.yaml                       # a config file...
    bioptimus pretrain configs/demo_minilm.yaml --max_steps 400       # ...with overrides
    torchrun --nproc_per_node 8 run_pretraining.py configs/bioptimus_full_scale.yaml

Each phase end writes ``<output_dir>/releases/v0.<k>/`` (model, tokenizer, ``bioptimus_phase.json``
with the held-out MLM loss, model card), loadable with ``AutoModelForMaskedLM.from_pretrained``.
The flags are :class:`~bioptimus_hf.pretraining.bioptimus_config.PretrainingModelArguments` and
:class:`~bioptimus_hf.pretraining.bioptimus_config.BioptimusConfig`; the run is
:func:`bioptimus_hf.pretraining.run.run_pretraining`, on :class:`~bioptimus_hf.pretraining.bioptimus_trainer.BioptimusTrainer`.
"""

from __future__ import annotations

from bioptimus_hf.commands.config_parser import parse_args
from bioptimus_hf.commands.run_logging import configure_training_logging
from bioptimus_hf.pretraining.bioptimus_config import PRETRAINING_ARGUMENT_TYPES as ARGUMENT_TYPES
from bioptimus_hf.utils.cli import BadInput, exit_on_bad_input


def main(argv: list[str] | None = None) -> None:
    """``[config.{yaml,json}] [--flag value ...]``: parse, then run (returns None so that the exit status is 0).
    Around the run: logging, bad input as one line, and (under torchrun / accelerate) every rank waiting for the
    others before the process group is closed."""
    model_args, config = parse_args(ARGUMENT_TYPES, argv)
    configure_training_logging(config)
    from bioptimus_hf.pretraining.run import run_pretraining  # datasets and models load only to run
    from bioptimus_hf.utils.distributed import close_process_group

    with exit_on_bad_input(BadInput):
        run_pretraining(model_args, config)
    close_process_group()


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
