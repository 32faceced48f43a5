"""``bioptimus ner`` (``python run_ner.py``): fine-tune and evaluate a BERT-style encoder on biomedical NER (BLURB
protocol), over several seeds.

Modelled on transformers' examples/pytorch/token-classification/run_ner.py, plus: CoNLL directories
with validation, training tagging scheme IO/BIO/BIOUL with span-level evaluation against the original
gold spans, windowing instead of truncation, Tinn et al. stabilisation flags and multi-seed reporting.

    bioptimus ner configs/ner_blurb.yaml                        # a yaml (or json) config file
    bioptimus ner configs/ner_blurb.yaml --seeds 1 2 --num_train_epochs 1   # later flags override
    bioptimus ner --model_name_or_path M --data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir out

The run, its outputs and its refusals: :func:`bioptimus_hf.ner.run.fine_tune_ner`; the flags:
:mod:`bioptimus_hf.ner.fine_tuning_config` and ``TrainingArguments``. Around the run, this command logs, makes bad
input one line, pushes the best seed with ``--push_to_hub`` (:mod:`bioptimus_hf.ner.hub_push`) and ends the process
group.
"""

from __future__ import annotations

from bioptimus_hf.commands.config_parser import parse_args as parse_config_and_flags
from bioptimus_hf.commands.run_logging import configure_logging
from bioptimus_hf.ner.fine_tuning_config import NER_ARGUMENT_TYPES
from bioptimus_hf.utils.cli import exit_on_bad_input, exit_on_hub_error


def parse_args(argv: list[str] | None = None):
    """``[config.{yaml,json}] [--flag value ...]``; flags given after the config file override it."""
    return parse_config_and_flags(NER_ARGUMENT_TYPES, argv)


def main(argv: list[str] | None = None) -> dict:
    """``[config.{yaml,json}] [--flag value ...]``: parse, then fine-tune every seed; returns the merged results."""
    model_args, data_args, stab_args, training_args = parse_args(argv)
    configure_logging(training_args)
    # datasets and models load only to run
    from bioptimus_hf.ner.hub_push import push_best_seed, take_ner_hub_settings
    from bioptimus_hf.ner.run import fine_tune_ner, load_ner_run_data
    from bioptimus_hf.utils.distributed import close_process_group

    with exit_on_bad_input():  # --push_to_hub pushes the best seed's model at the end; the Trainer never pushes
        hub = take_ner_hub_settings(training_args, model_args.save_model)
        data = load_ner_run_data(model_args, data_args)
    results = fine_tune_ner(model_args, data_args, stab_args, training_args, data)
    close_process_group()
    if hub is not None and training_args.process_index == 0:
        output_dir = training_args.output_dir
        with exit_on_hub_error(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {output_dir}"):
            push_best_seed(
                hub,
                output_dir,
                results,
                model_args.model_name_or_path,
                data_args.dataset_name,
                base_model_hub_id=model_args.base_model_hub_id,
            )
    return results


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
