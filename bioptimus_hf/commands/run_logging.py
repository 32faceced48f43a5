"""How a fine-tuning command logs: transformers' format at the process's level (under torchrun the main process at
INFO, the replicas at ``--log_level_replica``), transformers itself at WARNING. The library never configures
logging; the commands do, once, before calling it."""

from __future__ import annotations

import logging

import transformers


LOG_FORMAT = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"


def configure_logging(training_args=None) -> None:
    """Log at ``training_args``' process level (INFO without them)."""
    level = training_args.get_process_log_level() if training_args is not None else logging.INFO
    logging.basicConfig(format=LOG_FORMAT, level=level)
    transformers.utils.logging.set_verbosity_warning()
