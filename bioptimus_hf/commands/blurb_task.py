"""``bioptimus blurb-task`` (``python run_blurb.py``): fine-tune and evaluate an encoder on one BLURB dataset beyond
NER, over several seeds.

The task type is read from the data (or ``--task_type``): relation extraction (DDI, GAD, ChemProt), sentence
similarity (BIOSSES), document classification (HoC), question answering (PubMedQA, BioASQ). Its default
recipe (learning rate, batch size, epochs, input length: ``bioptimus_hf/blurb/blurb_config.py``) applies
unless a config file or a flag sets the value. Modelled on transformers'
examples/pytorch/text-classification/run_glue.py; docs/blurb.md.

    bioptimus blurb-task --model_name_or_path out/releases/v0.4 --data_dir ../shared/data/blurb/GAD \\
        --output_dir blurb/v0.4/GAD --seeds 1 2 3 4 5
    bioptimus blurb-task config.yaml --data_dir ../shared/data/blurb/HoC --num_train_epochs 3   # flags override

Outputs in ``output_dir``: ``all_results.json`` (BLURB's metric as ``test_score``, mean and std over seeds),
``results.md``, and per seed ``seed_<s>/`` with ``seed_results.json``, ``dev_predictions.jsonl``,
``test_predictions.jsonl`` and the fine-tuned model (unless ``--save_model false``). A seed whose
``seed_results.json`` exists is skipped.
"""

from __future__ import annotations

from bioptimus_hf.blurb.blurb_config import BLURB_ARGUMENT_TYPES, blurb_arguments
from bioptimus_hf.commands.config_parser import check_parsed, parse_settings
from bioptimus_hf.commands.run_logging import configure_logging
from bioptimus_hf.utils.cli import exit_on_bad_input


def parse_args(argv: list[str] | None = None):
    """``[config.{yaml,json}] [--flag value ...]``, over the recipe of the data's dataset (or task type)
    (:func:`~bioptimus_hf.blurb.blurb_config.blurb_arguments`)."""
    parsed = blurb_arguments(parse_settings(BLURB_ARGUMENT_TYPES, argv))  # bad data raises: main makes it one line
    check_parsed(parsed)
    return parsed


def run(argv: list[str] | None = None) -> dict:
    """Parse, fine-tune each unfinished seed, merge; bad input raises (``main`` makes it one line)."""
    # 1. arguments: flags over a config file over the task's recipe (its input length included)
    model_args, data_args, stab_args, training_args = parse_args(argv)
    configure_logging(training_args)
    # 2. fine-tune each unfinished seed and merge them (bioptimus_hf.blurb.run: loaded only to run, not for --help)
    from bioptimus_hf.blurb.run import run_blurb_task
    from bioptimus_hf.releases.seed_push import take_seed_hub_settings
    from bioptimus_hf.utils.distributed import close_process_group

    # --push_to_hub: taken (and the token cleared) before training; the Trainer never pushes
    hub = take_seed_hub_settings(training_args, model_args.save_model)
    results = run_blurb_task(model_args, data_args, stab_args, training_args)
    close_process_group()
    # 3. the best seed's model (dev score), uploaded by this project
    if hub is not None and training_args.process_index == 0:
        push_best_blurb_seed(hub, training_args.output_dir, results)
    return results


def push_best_blurb_seed(hub, output_dir: str, results: dict) -> None:
    """Upload the seed with the best dev score (``releases/seed_push.py``); a refusal by the Hub is one line."""
    from bioptimus_hf.finetuning.results import seed_dir
    from bioptimus_hf.releases.seed_push import best_seed, push_seed_folder
    from bioptimus_hf.utils.cli import exit_on_hub_error

    seed = best_seed(results["per_seed"], "eval_score")
    message = f"{results['model_name']} on {results['dataset']}: seed {seed}, the best dev score"
    with exit_on_hub_error(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {output_dir}"):
        push_seed_folder(hub, seed_dir(output_dir, seed), seed, message)


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point: bad input ends with one line (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
