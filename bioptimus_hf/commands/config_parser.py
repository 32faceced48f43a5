"""The one argument parser of every script and command: HfArgumentParser, a json/yaml config file first,
command-line flags overriding it.

    python run_pretraining.py configs/demo_minilm.yaml --max_steps 400

A value that an arguments dataclass refuses (its ``__post_init__`` raises ``ValueError``) ends the
program with that message, not a traceback. So does a multi-process launch (``torchrun``, ``accelerate
launch``) that ``TrainingArguments`` would set up as one process (see :func:`check_multi_process_launch`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml
from transformers import HfArgumentParser

from ..utils.cli import exit_on_bad_input


CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


def mapping_to_argv(data: dict) -> list[str]:
    """Flags for a mapping of argument names to values: how a config file becomes a command line (a config file's
    values come before the flags given after it, which override them)."""
    argv: list[str] = []
    for key, value in data.items():
        if value is None:
            continue
        flag = f"--{key}"
        if isinstance(value, bool):
            argv += [flag, str(value).lower()]
        elif isinstance(value, (list, tuple)):
            argv += [flag, *[json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in value]]
        elif isinstance(value, dict):
            argv += [flag, json.dumps(value)]
        else:
            argv += [flag, str(value)]
    return argv


def read_config(path: str | Path) -> dict:
    """The mapping of argument names to values a json/yaml config file holds (one line naming it if unusable)."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"config file {path} does not exist")
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise SystemExit(f"cannot read config file {path}: {error}")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SystemExit(f"config file {path} must hold a mapping of argument names to values")
    return data


def parse_args(dataclass_types, argv: list[str] | None = None, description: str | None = None):
    """Parse ``[config.{json,yaml}] [--flag value ...]``; flags given on the command line win."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser(dataclass_types, description=description)
    if argv and argv[0].endswith(CONFIG_SUFFIXES) and not argv[0].startswith("-"):
        argv = mapping_to_argv(read_config(argv[0])) + argv[1:]
    with exit_on_bad_input(ValueError):
        parsed = parser.parse_args_into_dataclasses(args=argv)
    check_multi_process_launch(parsed)
    check_torch_compile_supported(parsed)
    return parsed


def parse_mapping(dataclass_types, mapping: dict):
    """The dataclasses for a mapping of argument names to values, exactly as a config file holding it would
    give them: the same conversion of each value to its field's type (a yaml ``0.4`` for a ``str`` field is
    ``"0.4"``, ``"true"`` for a ``bool`` is ``True``), the same aliases, the same refusals (an unknown name
    is an error naming it). How the study hands its arms' settings to the library."""
    return parse_args(dataclass_types, mapping_to_argv(mapping))


# The install allows older torch (setup.cfg, docs/install.md); torch.compile of our models needs this one:
# torch 2.6's dynamo fails on transformers' forward wrappers and lacks recompile_limit (static_shapes.py).
TORCH_COMPILE_MIN_VERSION = "2.7.1"


def check_torch_compile_supported(parsed) -> None:
    """Refuse ``--torch_compile true`` on a torch older than :data:`TORCH_COMPILE_MIN_VERSION`, naming both."""
    import torch
    from transformers import TrainingArguments

    if torch.__version__ >= TORCH_COMPILE_MIN_VERSION:  # TorchVersion compares as a version, local part aside
        return
    for args in parsed:
        if isinstance(args, TrainingArguments) and args.torch_compile:
            raise SystemExit(
                f"error: --torch_compile needs torch >= {TORCH_COMPILE_MIN_VERSION}, this is torch {torch.__version__}; "
                "upgrade torch or leave --torch_compile off"
            )


def check_multi_process_launch(parsed) -> None:
    """Refuse a launch of several processes that ``TrainingArguments`` set up as one.

    On a machine without a GPU, ``torchrun --nproc_per_node N`` gives every process ``WORLD_SIZE=N``, but
    ``TrainingArguments`` only goes distributed there with ``--use_cpu true`` (transformers warns and carries on
    with ``parallel_mode`` NOT_PARALLEL). Every process would then train the whole run alone, and all of them
    would write checkpoints and releases into one ``--output_dir``. The error names the flag instead.
    """
    from transformers import TrainingArguments
    from transformers.training_args import ParallelMode

    world = int(os.environ.get("WORLD_SIZE") or 1)
    if world <= 1:
        return
    for args in parsed:
        if isinstance(args, TrainingArguments) and args.parallel_mode != ParallelMode.DISTRIBUTED:
            raise SystemExit(
                f"error: launched as {world} processes (WORLD_SIZE={world}), but TrainingArguments set up a single "
                f"process (parallel_mode {args.parallel_mode.value}): on a machine without a GPU add --use_cpu true, "
                "the only way the Trainer runs distributed on CPUs; otherwise every process would train alone and "
                "write into the same --output_dir"
            )
