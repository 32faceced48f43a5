"""The checks of a launch before anything loads (``bioptimus <command>``): the processes ``TrainingArguments`` set up
against those launched, and ``--torch_compile`` against the installed torch; a refusal is :class:`BadInput`."""

from __future__ import annotations

import os

from .errors import BadInput


# The install allows older torch (setup.cfg); torch.compile of our models needs this one: torch 2.6's dynamo fails
# on transformers' forward wrappers and lacks recompile_limit (pretraining/static_shapes.py).
TORCH_COMPILE_MIN_VERSION = "2.7.1"


def check_launch(parsed: tuple) -> None:
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
            raise BadInput(
                f"launched as {world} processes (WORLD_SIZE={world}), but TrainingArguments set up a single "
                f"process (parallel_mode {args.parallel_mode.value}): on a machine without a GPU add --use_cpu true, "
                "the only way the Trainer runs distributed on CPUs; otherwise every process would train alone and "
                "write into the same --output_dir"
            )
        if args.torch_compile and torch.__version__ < TORCH_COMPILE_MIN_VERSION:  # TorchVersion compares as one
            raise BadInput(
                f"--torch_compile needs torch >= {TORCH_COMPILE_MIN_VERSION}, this is torch "
                f"{torch.__version__}; upgrade torch or leave --torch_compile off"
            )
