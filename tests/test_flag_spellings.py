"""One convention per kind of flag in every command: lists space-separated as HfArgumentParser parses a ``list``
field, every boolean ``--flag [true|false]``, one name for one thing, and no comma-separated list in the docs and
configs."""

import dataclasses
import functools
import re
from pathlib import Path

import pytest
from transformers.hf_argparser import string_to_bool

from bioptimus_hf.commands import COMMANDS, argument_types, parse_args
from bioptimus_hf.utils.config_mapping import CommandParser


ROOT = Path(__file__).resolve().parent.parent


def command_types(name: str) -> tuple:
    """The argument dataclasses a command parses."""
    return argument_types(COMMANDS[name])


# ------------------------------------------------------------------------------------------ over the table
def every_field():
    """(command, dataclass, field) of every flag of every command."""
    for name in COMMANDS:
        for kind in command_types(name):
            for field in dataclasses.fields(kind):
                yield name, kind, field


def test_no_list_flag_is_a_comma_separated_string():
    """A list is a ``list`` field (``--seeds 1 2 3``): no text field asks for comma-separated values, and a flag
    whose name says it holds several things is a list."""
    import typing

    from transformers import TrainingArguments

    plural = re.compile(r"(^|_)(seeds|models|runs|datasets|dirs|files|layers|versions|languages|arms)$")
    counts = {"freeze_layers", "reinit_layers"}  # how many layers, not which
    counts |= {"batched_seeds"}  # a switch: whether the seeds train together, not which
    transformers_own = {f.name for f in dataclasses.fields(TrainingArguments)}
    wrong = []
    for name, kind, field in every_field():
        if field.name in transformers_own and issubclass(kind, TrainingArguments):
            continue
        help_text = field.metadata.get("help", "")
        hints = typing.get_type_hints(kind)
        is_list = "list[" in str(hints.get(field.name, field.type))
        if re.search(r"comma[- ]separated|commas", help_text, re.IGNORECASE) and not is_list:
            wrong.append(f"{name}: --{field.name} asks for commas")
        if plural.search(field.name) and not is_list and field.name not in counts:
            wrong.append(f"{name}: --{field.name} holds several things but is not a list")
    assert not wrong


def test_every_boolean_flag_reads_the_same_way():
    """``--flag`` alone is true, ``--flag true|false`` says it, for an optional boolean (default unset) as for a
    plain one; ``--no_flag`` where HfArgumentParser makes it (a field that defaults to true)."""
    for name in COMMANDS:
        parser = CommandParser(command_types(name))
        booleans = [a for a in parser._actions if a.type is string_to_bool]
        assert all(a.nargs == "?" and a.const is True for a in booleans), name
    from bioptimus_hf.pretraining.bioptimus_config import PRETRAINING_ARGUMENT_TYPES

    def config(*flags):
        return parse_args(PRETRAINING_ARGUMENT_TYPES, ["--output_dir", "o", *flags])[1]

    for flag in ("masked_only_prediction", "static_masked_positions"):
        assert getattr(config(f"--{flag}"), flag) is True
        assert getattr(config(f"--{flag}", "false"), flag) is False
        assert getattr(config(f"--{flag}", "true"), flag) is True
    assert config("--no_masked_only_prediction").masked_only_prediction is False
    assert config().static_masked_positions is None


def test_one_thing_has_one_name_in_every_command():
    """The flags several commands share are spelled alike: the model, the output, the seeds, the NER config."""
    names: dict[str, set[str]] = {}
    for name, _, field in every_field():
        names.setdefault(field.name, set()).add(name)
    assert {"model_name_or_path", "output_dir"} <= set(names)
    assert names["seeds"] >= {"ner", "blurb-task", "blurb", "compare"}
    assert names["ner_config"] >= {"blurb", "compare"} and "config" not in names
    assert names["window_stride"] >= {"ner", "tag"} and "stride" not in names
    assert "datasets" not in {f.name for f in dataclasses.fields(command_types("compare")[0])}


# ------------------------------------------------------------------------------------------ the docs
SHOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "configs").glob("*.yaml"))]


SCRIPTS = {"run_pretraining.py": "pretrain", "run_ner.py": "ner", "run_blurb.py": "blurb-task"}
SCRIPTS |= {"run_distillation.py": "distill", "run_study.py": "study"}


@functools.cache
def flags_of(command: str) -> frozenset[str]:
    return frozenset(o for a in CommandParser(command_types(command))._actions for o in a.option_strings)


@pytest.mark.parametrize("path", SHOWN, ids=lambda p: p.name)
def test_the_docs_and_configs_show_only_flags_that_exist(path):
    """A ``bioptimus`` command line (or a script's) shown in the docs uses only its command's flags (those after a
    ``--`` aside), and no config or command line gives a list as one comma-separated value."""
    text = path.read_text().replace("\\\n", " ")
    wrong = []
    for line in text.splitlines():
        if path.suffix == ".yaml" and re.match(r"^\s*#", line) is None and re.search(r":\s*['\"]?\d+,\d", line):
            wrong.append(line)
        for match in re.finditer(r"(?:(?<![\w/.-])bioptimus ([a-z][a-z-]*[a-z])\b|(run_\w+\.py))([^`|]*)", line):
            command, script, rest = match.groups()
            command = command if script is None else SCRIPTS.get(script)
            if command not in COMMANDS:
                continue
            used = set(re.findall(r"(?<![\w-])--[a-z]\w*", rest.split(" -- ")[0]))
            if used - flags_of(command) or re.search(r"--(seeds|models|datasets|data_dirs) \S*\d*,", rest):
                wrong.append(f"{line.strip()}: {sorted(used - flags_of(command))}")
    assert not wrong
