"""One convention per kind of flag in every command (``bioptimus_hf/utils/flag_spellings.py``): lists space-separated
as HfArgumentParser parses a ``list`` field, every boolean ``--flag [true|false]``, one name for one thing; and every
old spelling (a renamed flag, a comma-separated list) parsed to the same values as the new one, with one line on
stderr naming the new spelling, on the command line, in a config file and in a mapping."""

import dataclasses
import importlib
import re
import shlex
from pathlib import Path

import pytest
import yaml
from transformers.hf_argparser import string_to_bool

from bioptimus_hf.commands import blurb_task, config_parser, dispatch
from bioptimus_hf.commands.config_parser import CommandParser, parse_args
from bioptimus_hf.utils import flag_spellings
from bioptimus_hf.utils.config_mapping import configs_from_mapping
from bioptimus_hf.utils.flag_spellings import COMMA_LIST_FLAGS, RENAMED_FLAGS, declared


ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees every deprecation line afresh (a process names each old spelling once)."""
    monkeypatch.setattr(flag_spellings, "WARNED", set())


def command_types(name: str) -> list[type]:
    """The argument dataclasses a command's module parses (every dataclass it names)."""
    module = importlib.import_module(f"bioptimus_hf.commands.{dispatch.COMMANDS[name].module}")
    found: list[type] = []
    for value in vars(module).values():
        for kind in value if isinstance(value, tuple) else (value,):
            if isinstance(kind, type) and dataclasses.is_dataclass(kind) and kind not in found:
                if any("help" in f.metadata for f in dataclasses.fields(kind)):  # not a record (VersionReport)
                    found.append(kind)
    return found


class Parsed(Exception):
    """Raised in place of running a command, once its line is parsed."""


PARSE = CommandParser.parse_args_into_dataclasses


def parsed(name: str, argv: list[str], monkeypatch) -> tuple:
    """The dataclasses ``bioptimus NAME ARGV`` parses to (blurb-task's: built over the data's recipe)."""
    results = []

    def record(self, *args, **kwargs):
        results.append(PARSE(self, *args, **kwargs))
        raise Parsed()

    def record_built(built):  # blurb-task builds its dataclasses from what the line sets (blurb_arguments)
        results.append(built)
        raise Parsed()

    monkeypatch.setattr(CommandParser, "parse_args_into_dataclasses", record)
    monkeypatch.setattr(blurb_task, "check_parsed", record_built)
    monkeypatch.setattr(config_parser, "check_model_references", lambda parsed: None)  # the examples' models
    with pytest.raises(Parsed):
        dispatch.main([name, *argv])
    return results[-1]


def example_argv(name: str) -> list[str]:
    """The registry's example of a command (its flags for the command itself, not those after ``--``)."""
    argv = shlex.split(dispatch.COMMANDS[name].example)[2:]
    return argv[: argv.index("--")] if "--" in argv else argv


# (command, old spelling, new spelling, the deprecation line): each added to the command's example
OLD_AND_NEW = [
    ("ner", "--seeds 1,2,3", "--seeds 1 2 3", "--seeds 1,2,3 is deprecated: use --seeds 1 2 3"),
    ("ner", "--seeds=4,5", "--seeds 4 5", "--seeds 4,5 is deprecated: use --seeds 4 5"),
    ("blurb-task", "--seeds 1,2", "--seeds 1 2", "--seeds 1,2 is deprecated: use --seeds 1 2"),
    ("blurb", "--seeds 1,2", "--seeds 1 2", "--seeds 1,2 is deprecated: use --seeds 1 2"),
    ("study", "--ner_seeds 1,2", "--ner_seeds 1 2", "--ner_seeds 1,2 is deprecated: use --ner_seeds 1 2"),
    ("compare", "--seeds 1,2", "--seeds 1 2", "--seeds 1,2 is deprecated: use --seeds 1 2"),
    ("compare", "--models a=x,b=y", "--models a=x b=y", "--models a=x,b=y is deprecated: use --models a=x b=y"),
    ("compare", "--datasets d1,d2", "--data_dirs d1 d2", "--datasets d1,d2 is deprecated: use --data_dirs d1 d2"),
    ("compare", "--datasets d1", "--data_dirs d1", "--datasets is deprecated: use --data_dirs"),
    ("compare", "--config ner_blurb", "--ner_config ner_blurb", "--config is deprecated: use --ner_config"),
    ("distill", "--student_layers 0,3", "--student_layers 0 3", "--student_layers 0,3 is deprecated: use --student_layers 0 3"),
    ("publish", "--repo_id acme/x", "--hub_model_id acme/x", "--repo_id is deprecated: use --hub_model_id"),
    ("publish", "--private", "--hub_private_repo", "--private is deprecated: use --hub_private_repo"),
    ("tag", "--model m2", "--model_name_or_path m2", "--model is deprecated: use --model_name_or_path"),
    ("tag", "--stride 8", "--window_stride 8", "--stride is deprecated: use --window_stride"),
]  # fmt: skip


@pytest.mark.parametrize("name, old, new, line", OLD_AND_NEW, ids=[f"{row[0]} {row[1]}" for row in OLD_AND_NEW])
def test_an_old_spelling_parses_as_the_new_one_with_one_deprecation_line(name, old, new, line, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # the examples name ../shared/data as the README does
    from_new = parsed(name, example_argv(name) + shlex.split(new), monkeypatch)
    assert capsys.readouterr().err == ""
    from_old = parsed(name, example_argv(name) + shlex.split(old), monkeypatch)
    assert from_old == from_new
    assert capsys.readouterr().err.splitlines() == [f"warning: {line}"]


def test_old_spellings_in_a_config_file_parse_as_the_new_ones(tmp_path, capsys):
    types = tuple(command_types("compare"))
    d1, d2 = tmp_path / "d1", tmp_path / "d2"  # absolute: an old `datasets` key stays relative to the working dir
    old = {"models": "a=x,b=y", "datasets": f"{d1},{d2}", "config": "ner_blurb", "seeds": "1,2,3", "output_dir": "o"}
    new = {"models": ["a=x", "b=y"], "data_dirs": [str(d1), str(d2)], "ner_config": "ner_blurb", "seeds": [1, 2, 3]}
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump({**new, "output_dir": "o"}))
    from_new = parse_args(types, [str(tmp_path / "new.yaml")])
    assert capsys.readouterr().err == ""
    from_old = parse_args(types, [str(tmp_path / "old.yaml")])
    assert from_old == from_new and from_new[0].seeds == [1, 2, 3]
    assert capsys.readouterr().err.splitlines() == [  # in the file's order
        "warning: --config is deprecated: use --ner_config",
        f"warning: --datasets {d1},{d2} is deprecated: use --data_dirs {d1} {d2}",
        "warning: --models a=x,b=y is deprecated: use --models a=x b=y",
        "warning: --seeds 1,2,3 is deprecated: use --seeds 1 2 3",
    ]
    # a flag after the config overrides it, in either spelling
    (again,) = parse_args(types, [str(tmp_path / "new.yaml"), "--seeds", "7,8"])
    assert again.seeds == [7, 8]


def test_a_deprecation_line_is_printed_once_a_process(capsys):
    types = tuple(command_types("tag"))
    for _ in range(3):
        parse_args(types, ["--model", "m", "--stride", "8", "--text", "x"])
    assert capsys.readouterr().err.splitlines() == [
        "warning: --model is deprecated: use --model_name_or_path",
        "warning: --stride is deprecated: use --window_stride",
    ]


def test_a_mapping_takes_the_old_spellings_as_the_parser_does(capsys):
    from bioptimus_hf.ner.fine_tuning_config import NER_ARGUMENT_TYPES

    base = {"model_name_or_path": "m", "output_dir": "o"}
    assert configs_from_mapping(NER_ARGUMENT_TYPES, {**base, "seeds": "1,2"}) == configs_from_mapping(
        NER_ARGUMENT_TYPES, {**base, "seeds": [1, 2]}
    )
    assert capsys.readouterr().err.splitlines() == ["warning: --seeds 1,2 is deprecated: use --seeds 1 2"]


# ------------------------------------------------------------------------------------------ over the registry
def every_field():
    """(command, dataclass, field) of every flag of every command."""
    for name in dispatch.COMMANDS:
        for kind in command_types(name):
            for field in dataclasses.fields(kind):
                yield name, kind, field


def test_no_list_flag_is_a_comma_separated_string_any_more():
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


def test_every_renamed_flag_names_a_flag_of_its_dataclass_and_is_no_flag_itself():
    for name in dispatch.COMMANDS:
        types = command_types(name)
        parser = CommandParser(types)
        flags = set(parser.flags())
        for old, new in declared(types, RENAMED_FLAGS).items():
            assert new in flags and old not in flags, (name, old, new)
        for flag in declared(types, COMMA_LIST_FLAGS):
            assert flag in parser.spellings.comma_lists, (name, flag)


def test_every_boolean_flag_reads_the_same_way():
    """``--flag`` alone is true, ``--flag true|false`` says it, for an optional boolean (default unset) as for a
    plain one; ``--no_flag`` where HfArgumentParser makes it (a field that defaults to true)."""
    for name in dispatch.COMMANDS:
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


@pytest.mark.parametrize("path", SHOWN, ids=lambda p: p.name)
def test_the_docs_and_configs_show_the_new_spellings(path):
    """A ``bioptimus`` command line shown in the docs uses no old spelling of its command's flags, and no config
    or command line gives a list as one comma-separated value."""
    text = path.read_text().replace("\\\n", " ")
    wrong = []
    for line in text.splitlines():
        if path.suffix == ".yaml" and re.match(r"^\s*#", line) is None and re.search(r":\s*['\"]?\d+,\d", line):
            wrong.append(line)
        for match in re.finditer(r"(?:(?<![\w/.-])bioptimus ([a-z][a-z-]*[a-z])\b|(run_\w+\.py))([^`|]*)", line):
            command, script, rest = match.groups()
            command = command if script is None else dispatch.command_for_program(script)
            if command not in dispatch.COMMANDS:
                continue
            types = command_types(command)
            old = set(declared(types, RENAMED_FLAGS))
            used = set(re.findall(r"--\w+", rest))
            if used & old or re.search(r"--(seeds|models|datasets|data_dirs) \S*\d*,", rest):
                wrong.append(line.strip())
    assert not wrong
