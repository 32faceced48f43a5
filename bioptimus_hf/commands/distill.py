"""``bioptimus distill`` (``python run_distillation.py``): distil a compact student from a BIOptimus release (or
any BERT masked LM) with the recipes of Rohanian et al. (DistilBioBERT, CompactBioBERT, TinyBioBERT), on the corpus
and through the curriculum of ``bioptimus pretrain``.

    bioptimus distill --teacher_model_name_or_path T --student_layers 0 2 4 \\
        --train_file corpus.txt --output_dir O --max_steps N                      # DistilBioBERT, half depth
    bioptimus distill --teacher_model_name_or_path T --recipe compactbiobert ...
    bioptimus distill --teacher_model_name_or_path T --recipe tinybiobert --student_layers 1 3 5 \\
        --student_hidden_size 192 ...
    bioptimus distill ... --single_phase all      # through the curriculum (default: phase 0.1 only)
    torchrun --nproc_per_node 8 run_distillation.py ...

The student is written to ``<output_dir>/student/`` as a release (plain ``BertForMaskedLM``, tokenizer,
``bioptimus_phase.json`` with the distillation record, model card), loadable with
``AutoModelForMaskedLM.from_pretrained`` and publishable with ``bioptimus publish --run_dir O/student``.
The flags: :data:`bioptimus_hf.distillation.distillation_config.DISTILLATION_ARGUMENT_TYPES`; the run:
:func:`bioptimus_hf.distillation.run.run_distillation`. See docs/distillation.md.
"""

from __future__ import annotations

from bioptimus_hf.commands.config_parser import parse_args
from bioptimus_hf.commands.run_logging import configure_training_logging
from bioptimus_hf.distillation.distillation_config import DISTILLATION_ARGUMENT_TYPES
from bioptimus_hf.utils.cli import BadInput, exit_on_bad_input


def main(argv=None) -> None:
    """``[config.{yaml,json}] [--flag value ...]``: parse, then distil (bad input ends with one line); under
    torchrun / accelerate every rank waits for the others at the end, then the process group is closed."""
    arguments = parse_args(DISTILLATION_ARGUMENT_TYPES, argv)
    configure_training_logging(arguments[-1])  # the TrainingArguments
    from bioptimus_hf.distillation.run import run_distillation  # datasets and models load only to run
    from bioptimus_hf.utils.distributed import close_process_group

    with exit_on_bad_input(BadInput):
        run_distillation(*arguments)
    close_process_group()


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
