"""How a command logs, configured once before it calls the library (which never configures logging):

* :func:`configure_logging` (fine-tuning: ``bioptimus ner``, ``bioptimus blurb-task``): transformers' format on
  stderr at the process's level (under torchrun the main process at INFO, the replicas at ``--log_level_replica``),
  transformers itself at WARNING;
* :func:`configure_training_logging` (``bioptimus pretrain``, ``bioptimus distill``): as in transformers' examples,
  on stdout, the process-aware level for this package, transformers and datasets.
"""

from __future__ import annotations

import logging
import sys

import transformers


LOG_FORMAT = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"


def configure_logging(training_args=None) -> None:
    """Log at ``training_args``' process level (INFO without them)."""
    level = training_args.get_process_log_level() if training_args is not None else logging.INFO
    logging.basicConfig(format=LOG_FORMAT, level=level)
    transformers.utils.logging.set_verbosity_warning()


def configure_training_logging(training_args) -> None:
    """Logging as in transformers' examples: process-aware level for this package, transformers and datasets."""
    import datasets

    logging.basicConfig(format=LOG_FORMAT, datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
    level = training_args.get_process_log_level()
    logging.getLogger("bioptimus_hf").setLevel(level)
    logging.getLogger("__main__").setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
