"""The one argument parser of every script and command: HfArgumentParser, a json/yaml config file first (a path or
a packaged config's name, ``bioptimus_hf/utils/config_files.py``), command-line flags overriding it.

    bioptimus pretrain demo_minilm --max_steps 400
    python run_pretraining.py configs/demo_minilm.yaml --max_steps 400

What a user meets here:

* help: the command's description and example from the registry (``commands/dispatch.py``), the config in the
  usage line, each flag once with its default once;
* one convention per kind of flag (``utils/flag_spellings.py``): lists space-separated, ``--flag true|false`` for
  every boolean (``--flag`` alone: true), and old spellings (a renamed flag, ``--seeds 1,2,3``) still parsed with
  one line on stderr naming the new one, in a config file too;
* a command line that cannot be parsed is one line and exit status 2 (``utils/cli.py``): an unknown flag names the
  nearest real one (prefix matching is off: ``--num_train_epoch`` is not ``--num_train_epochs``), a bad choice
  names the valid ones, no usage dump;
* bad input is one line and exit status 1: a config file that is missing or malformed (its line and column), a
  value an arguments dataclass refuses (its ``__post_init__`` raises ``ValueError``), a model flag naming neither a
  directory nor a Hub id (``utils/model_reference.py``, checked before anything loads), a multi-process launch
  (``torchrun``, ``accelerate launch``) that ``TrainingArguments`` would set up as one process
  (:func:`check_multi_process_launch`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import sys
import textwrap

from transformers.hf_argparser import string_to_bool

from ..utils.cli import exit_on_bad_input, exit_on_usage_error, unknown_name_message, usage_message
from ..utils.config_files import packaged_config_names, read_config
from ..utils.config_mapping import ListingArgumentParser
from ..utils.flag_spellings import FlagSpellings
from ..utils.model_reference import MODEL_REFERENCE_FIELDS, check_model_reference
from .dispatch import COMMANDS, command_for_program


USAGE = "%(prog)s [config.yaml] [--flag value ...]"
HELP_WIDTH = 100


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help as written: the description and example keep their lines; each flag is listed once (not again as its
    hyphenated twin), with its value's name once and its default once (not where the help already states it)."""

    def __init__(self, prog: str, **kwargs) -> None:
        width = min(HELP_WIDTH, shutil.get_terminal_size().columns - 2)
        super().__init__(prog, width=width, max_help_position=32, **kwargs)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.nargs == 0 and action.option_strings[0].startswith("--no_"):  # HfArgumentParser's negation
            return f"The same as --{action.dest} false."
        if action.required:
            return f"{text} (required)"
        if action.default in (None, argparse.SUPPRESS) or "default" in text.lower():
            return text
        return f"{text} (default: %(default)s)"

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings:
            return super()._format_action_invocation(action)
        options = action.option_strings
        names = [name for name in options if not ("-" in name[2:] and "--" + name[2:].replace("-", "_") in options)]
        if action.nargs == 0:
            return ", ".join(names)
        metavar = (
            "[true|false]"
            if action.type is string_to_bool
            else self._format_args(action, self._get_default_metavar_for_optional(action))
        )
        return f"{', '.join(names)} {metavar}"


class CommandParser(ListingArgumentParser):
    """HfArgumentParser without prefix matching, whose usage errors are one line (``utils/cli.py``), where every
    boolean reads alike and old spellings still parse (:attr:`spellings`)."""

    def __init__(self, dataclass_types, **kwargs) -> None:
        super().__init__(dataclass_types, **kwargs)
        types = dataclass_types if isinstance(dataclass_types, (list, tuple)) else [dataclass_types]
        self.spellings = FlagSpellings.of(types, self.arguments)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        # HfArgumentParser gives `--flag` alone the value true for a bool field, not for an optional one
        # (`bool | None`, default unset); here every boolean reads `--flag [true|false]`.
        if kwargs.get("type") is string_to_bool and "nargs" not in kwargs and args and args[0].startswith("-"):
            kwargs.update(nargs="?", const=True)
        return super().add_argument(*args, **kwargs)

    def error(self, message: str):
        exit_on_usage_error(usage_message(message))

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self.unknown_flags_message(extras))
        return namespace, extras

    def flags(self) -> list[str]:
        return [name for action in self.arguments for name in action.option_strings if name.startswith("--")]

    def unknown_flags_message(self, extras: list[str]) -> str:
        flag = next((item for item in extras if item.startswith("-")), None)
        if flag is None:
            return f"unexpected value {extras[0]!r}: only the config may come before the flags"
        return self.unknown_flag_message(flag.split("=", 1)[0])

    def unknown_flag_message(self, flag: str, what: str = "flag") -> str:
        """``unknown flag --x; did you mean --y?`` (the nearest real flag, if one is near); a config's ``key`` is
        named without the dashes."""
        return unknown_name_message(flag, self.flags(), what, f"{self.prog} --help lists the flags")

    def config_argv(self, reference: str) -> list[str]:
        """The flags of a config file (a path or a packaged config's name); a key that is no flag is bad input."""
        mapping = self.spellings.modern_mapping(read_config(reference))
        flags = set(self.flags())
        unknown = next((key for key in mapping if f"--{key}" not in flags), None)
        if unknown is not None:
            raise ValueError(f"config file {reference}: {self.unknown_flag_message(unknown, 'key')}")
        return mapping_to_argv(mapping)


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


def wrap_command(command: str, width: int, indent: str = "  ") -> str:
    """A shell command over several lines (``\\`` continuations), each flag kept with its values."""
    groups: list[str] = []
    for token in shlex.split(command):
        quoted = shlex.quote(token)
        if groups and not token.startswith("-") and groups[-1].startswith("-") and token != "--":
            groups[-1] += " " + quoted
        else:
            groups.append(quoted)
    lines = [indent + groups[0]]
    for group in groups[1:]:
        if len(lines[-1]) + 1 + len(group) + 2 > width:
            lines[-1] += " \\"
            lines.append(indent + "    " + group)
        else:
            lines[-1] += " " + group
    return "\n".join(lines)


def command_description(name: str) -> str:
    """The top of ``bioptimus <name> --help``: the registry's paragraph, its example, what the config may be."""
    command = COMMANDS[name]
    width = min(HELP_WIDTH, shutil.get_terminal_size().columns - 2)
    configs = ", ".join(packaged_config_names())
    parts = [
        textwrap.fill(command.description, width),
        "example:\n" + wrap_command(command.example, width),
        textwrap.fill(
            "config.yaml: a json or yaml file of these flags (name: value), or a packaged config's name ("
            f"{configs}); flags after it override it. Relative paths in it are relative to its folder.",
            width,
        ),
    ]
    return "\n\n".join(parts)


def build_parser(dataclass_types, description: str | None = None) -> CommandParser:
    """The parser of a command: named and described by the registry when the program is one of its commands."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else None
    name = command_for_program(prog or "")
    if name is not None:
        description = command_description(name)
    elif description:
        description = textwrap.dedent(description).strip()
    return CommandParser(
        dataclass_types,
        prog=prog,
        usage=USAGE,
        description=description,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )


def parse_args(dataclass_types, argv: list[str] | None = None, description: str | None = None):
    """Parse ``[config] [--flag value ...]``; flags given on the command line win over the config's values.

    ``description`` is shown by a program that is not one of the registry's commands (theirs come from it)."""
    parser = build_parser(dataclass_types, description)
    with exit_on_bad_input(ValueError):
        parsed = parser.parse_args_into_dataclasses(args=command_argv(parser, argv))
    check_parsed(parsed)
    return parsed


def command_argv(parser: CommandParser, argv: list[str] | None = None) -> list[str]:
    """``[config] [--flag value ...]`` as flags: the config file's first, then the command line's, old spellings
    made modern."""
    argv = list(sys.argv[1:] if argv is None else argv)
    config: list[str] = []
    if argv and not argv[0].startswith("-"):
        with exit_on_bad_input():
            config, argv = parser.config_argv(argv[0]), argv[1:]
    return config + parser.spellings.modern_argv(argv)


def parse_settings(dataclass_types, argv: list[str] | None = None, description: str | None = None) -> dict:
    """What ``[config] [--flag value ...]`` sets, by field name (a field left unset is absent): for a command whose
    defaults depend on what is set (``bioptimus blurb-task``: the dataset's recipe under the flags). Parsed and
    refused as :func:`parse_args` does; the caller builds the dataclasses and checks them (:func:`check_parsed`)."""
    parser = build_parser(dataclass_types, description)
    unset = object()
    names = {f.name for dataclass_type in dataclass_types for f in dataclasses.fields(dataclass_type) if f.init}
    namespace = argparse.Namespace(**dict.fromkeys(names, unset))
    with exit_on_bad_input(ValueError):
        namespace, _ = parser.parse_known_args(command_argv(parser, argv), namespace=namespace)
    return {name: value for name, value in vars(namespace).items() if value is not unset}


def check_parsed(parsed) -> None:
    """The checks of parsed arguments before anything loads: model references, a multi-process launch, torch.compile."""
    with exit_on_bad_input(ValueError):
        check_model_references(parsed)
    check_multi_process_launch(parsed)
    check_torch_compile_supported(parsed)


def check_model_references(parsed) -> None:
    """Refuse a model or tokenizer flag naming neither an existing path nor a Hub id, before anything loads."""
    for args in parsed:
        if not dataclasses.is_dataclass(args):
            continue
        for field in dataclasses.fields(args):
            value = getattr(args, field.name, None)
            if field.name in MODEL_REFERENCE_FIELDS and isinstance(value, str):
                check_model_reference(value, field.name)


# The install allows older torch (setup.cfg, docs/install.md); torch.compile of our models needs this one:
# torch 2.6's dynamo fails on transformers' forward wrappers and lacks recompile_limit (static_shapes.py).
TORCH_COMPILE_MIN_VERSION = "2.7.1"


def check_torch_compile_supported(parsed) -> None:
    """Refuse ``--torch_compile true`` on a torch older than :data:`TORCH_COMPILE_MIN_VERSION`, naming both."""
    if not any(getattr(args, "torch_compile", False) for args in parsed):  # torch not imported for nothing
        return
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
    world = int(os.environ.get("WORLD_SIZE") or 1)
    if world <= 1:
        return
    from transformers import TrainingArguments
    from transformers.training_args import ParallelMode

    for args in parsed:
        if isinstance(args, TrainingArguments) and args.parallel_mode != ParallelMode.DISTRIBUTED:
            raise SystemExit(
                f"error: launched as {world} processes (WORLD_SIZE={world}), but TrainingArguments set up a single "
                f"process (parallel_mode {args.parallel_mode.value}): on a machine without a GPU add --use_cpu true, "
                "the only way the Trainer runs distributed on CPUs; otherwise every process would train alone and "
                "write into the same --output_dir"
            )
