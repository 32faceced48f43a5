"""How a command parses its line, checks it and configures logging, before it calls its wing."""

from __future__ import annotations

import inspect
import logging
import os
import sys

from ..utils.cli import exit_on_bad_input


LOG_FORMAT = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"
# The install allows older torch (setup.cfg); torch.compile of our models needs this one: torch 2.6's dynamo fails
# on transformers' forward wrappers and lacks recompile_limit (pretraining/static_shapes.py).
TORCH_COMPILE_MIN_VERSION = "2.7.1"


def parse_args(dataclass_types, argv=None, prog=None, description=None, build=None) -> tuple:
    """``[config] [--flag value ...]`` as ``dataclass_types`` (``build``: from what the line sets), checked before
    anything loads: a model flag naming neither a path nor a Hub id, a launch of several processes that
    ``TrainingArguments`` set up as one, ``--torch_compile`` on too old a torch. Bad input ends in one line."""
    from ..utils.config_mapping import CommandParser
    from ..utils.model_reference import check_model_references

    description = inspect.cleandoc(description) if description else None
    parser = CommandParser(dataclass_types, prog=prog, description=description)
    argv = list(sys.argv[1:] if argv is None else argv)
    with exit_on_bad_input():
        parsed = build(parser.parse_settings(argv)) if build else parser.parse_line(argv)
        check_model_references(parsed)
    check_training_arguments(parsed)
    return parsed


def configure_logging(style: str | None, parsed: tuple) -> None:
    """How a command logs (the library never configures logging): ``"run"`` at the process's level on stderr (INFO
    without ``TrainingArguments``); ``"training"`` as transformers' examples, on stdout, datasets and transformers
    at that level too."""
    if style is None:
        return
    training = next((args for args in parsed if hasattr(args, "get_process_log_level")), None)
    level = training.get_process_log_level() if training is not None else logging.INFO
    if style == "run":
        logging.basicConfig(format=LOG_FORMAT, level=level)
        return
    import datasets
    import transformers

    logging.basicConfig(format=LOG_FORMAT, datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
    for name in ("bioptimus_hf", "__main__"):
        logging.getLogger(name).setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()


def check_training_arguments(parsed: tuple) -> None:
    """Refuse a launch of several processes (``torchrun``, ``accelerate launch``) that ``TrainingArguments`` set up
    as one: on a machine without a GPU it goes distributed only with ``--use_cpu true``, else every process would
    train alone into one ``--output_dir``. Refuse ``--torch_compile`` on a torch older than 2.7.1."""
    world = int(os.environ.get("WORLD_SIZE") or 1)
    if world <= 1 and not any(getattr(args, "torch_compile", False) for args in parsed):
        return  # torch not imported for nothing
    import torch
    from transformers import TrainingArguments

    for args in (args for args in parsed if isinstance(args, TrainingArguments)):
        if world > 1 and args.parallel_mode.value != "distributed":
            raise SystemExit(
                f"error: launched as {world} processes (WORLD_SIZE={world}), but TrainingArguments set up a single "
                f"process (parallel_mode {args.parallel_mode.value}): on a machine without a GPU add --use_cpu true, "
                "the only way the Trainer runs distributed on CPUs; otherwise every process would train alone and "
                "write into the same --output_dir"
            )
        if args.torch_compile and torch.__version__ < TORCH_COMPILE_MIN_VERSION:  # TorchVersion compares as one
            raise SystemExit(
                f"error: --torch_compile needs torch >= {TORCH_COMPILE_MIN_VERSION}, this is torch "
                f"{torch.__version__}; upgrade torch or leave --torch_compile off"
            )
