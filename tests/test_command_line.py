"""The command line as a user meets it: the table's help (plain text, a description and a runnable example per
command, the config in the usage line, each flag and default once, flags grouped by their field's group), a config
under the flags in one parse, packaged configs named by name from any directory, relative paths in a config
resolved against its folder, and the README and docs naming only commands that exist. Bad inputs and their one-line
errors: tests/test_cli_errors.py."""

import dataclasses
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest

from bioptimus_hf import commands
from bioptimus_hf.commands import COMMANDS, argument_types
from bioptimus_hf.utils.config_files import (
    INPUT_PATH_FIELDS,
    NAME_OR_PATH_FIELDS,
    OUTPUT_PATH_FIELDS,
    packaged_configs_dir,
    read_config,
    resolve_config,
)
from bioptimus_hf.utils.config_mapping import CommandParser
from helpers import python_path


pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------------ the registry and help
def test_bioptimus_help_imports_neither_torch_nor_transformers():
    code = (
        "import sys; from bioptimus_hf import commands; commands.main(['--help']); "
        "print(sorted(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=python_path(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
    assert "train-tokenizer" in result.stdout and "demo_minilm" in result.stdout


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_a_plain_paragraph_and_an_example_of_itself(name):
    command = COMMANDS[name]
    assert command.summary and command.description and command.example
    assert "\n" not in command.description and not re.search(r"``|:(func|mod|class|data):|::", command.description)
    assert command.example.startswith(f"bioptimus {name} ")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_flag_of_every_command_has_help(name):
    """Each field its parser turns into a flag has its own help, or is TrainingArguments' own field (its help)."""
    from transformers import TrainingArguments

    missing = [
        f"{kind.__name__}.{f.name}"
        for kind in argument_types(COMMANDS[name])
        for f in dataclasses.fields(kind)
        if f.init and not f.metadata.get("help") and TrainingArguments.__dataclass_fields__.get(f.name) is not f
    ]
    assert missing == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_example_parses_with_its_commands_flags(name, monkeypatch):
    monkeypatch.setattr("bioptimus_hf.utils.model_reference.check_model_reference", lambda value, flag: None)
    monkeypatch.chdir(ROOT)  # the examples name ../shared/data as the README does
    parsed = commands.parse(name, shlex.split(COMMANDS[name].example)[2:])
    assert [type(args) for args in parsed] == list(argument_types(COMMANDS[name]))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_commands_help_reads_as_written(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "102")  # 100 columns of help
    with pytest.raises(SystemExit) as stopped:
        commands.main([name, "--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    command = COMMANDS[name]
    top = f"usage: bioptimus {name} [config.yaml] [--flag value ...]\n\n{textwrap.fill(command.description, 100)}"
    assert text.startswith(top + "\n\nexample:\n  bioptimus " + name)
    example = text.split("example:\n", 1)[1].split("\n\n", 1)[0]
    assert shlex.split(example.replace("\\\n", " ")) == shlex.split(command.example)
    assert "``" not in text and ":func:" not in text
    options = text.split("\noptions:\n", 1)[1]
    blocks = re.split(r"\n(?=  -)", options)
    for block in blocks:
        flat = " ".join(block.split())
        assert flat.count("(default: ") <= 1, flat
        if "(default: " in flat:  # printed by the formatter only where the help does not state it already
            assert flat.lower().count("default") == 1, flat
    assert not re.search(r"\n  --[a-z]+-[a-z-]+", options), "a hyphenated twin of a flag is listed"


@dataclasses.dataclass
class Tiny:
    rate: float = dataclasses.field(default=0.5, metadata={"help": "A rate."})
    name: str = dataclasses.field(metadata={"help": "A name."}, default=None)
    fast: bool = dataclasses.field(default=True, metadata={"help": "Go fast."})
    mode: str = dataclasses.field(default="a", metadata={"help": "The mode (default: a, the usual)."})
    model_path: str = dataclasses.field(default="x", metadata={"help": "A path.", "aliases": ["--model"]})


def test_the_help_formatter_prints_each_flag_and_default_once(monkeypatch):
    monkeypatch.setenv("COLUMNS", "82")
    parser = CommandParser((Tiny,), prog="tiny")
    lines = [" ".join(line.split()) for line in parser.format_help().split("options:\n", 1)[1].splitlines()]
    assert lines == [
        "-h, --help show this help message and exit",
        "--rate RATE A rate. (default: 0.5)",
        "--name NAME A name.",
        "--fast [true|false] Go fast. (default: True)",
        "--no_fast The same as --fast false.",
        "--mode MODE The mode (default: a, the usual).",
        "--model_path, --model MODEL_PATH",
        "A path. (default: x)",
    ]
    (tiny,) = parser.parse_line(["--model-path", "y", "--fast", "false"])  # a hyphenated twin, an alias too
    assert (tiny.model_path, tiny.fast) == ("y", False)


@dataclasses.dataclass
class Grouped:
    help_groups: ClassVar[dict[str, str]] = {"rate": "curriculum", "steps": "releases", "mode": "curriculum"}
    rate: float = dataclasses.field(default=0.5, metadata={"help": "A rate."})
    name: str = dataclasses.field(default="n", metadata={"help": "A name."})
    steps: int = dataclasses.field(default=3, metadata={"help": "Steps."})
    mode: str = dataclasses.field(default="a", metadata={"help": "A mode."})


def test_a_fields_group_puts_its_flag_in_a_help_group_of_that_title_in_first_seen_order(monkeypatch):
    monkeypatch.setenv("COLUMNS", "82")
    text = CommandParser((Grouped,), prog="grouped").format_help()
    titles = [line for line in text.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert titles == ["options:", "curriculum:", "releases:"]
    sections = dict(re.findall(r"(?m)^(\w+):\n((?:  .*\n?)+)", text))
    assert re.findall(r"--(\w+)", sections["curriculum"]) == ["rate", "mode"]
    assert re.findall(r"--(\w+)", sections["releases"]) == ["steps"]
    assert "--name" in sections["options"]
    (grouped,) = CommandParser((Grouped,)).parse_line(["--rate", "0.25", "--steps", "4"])
    assert (grouped.rate, grouped.steps, grouped.mode) == (0.25, 4, "a")


@dataclasses.dataclass
class Required:
    model: str = dataclasses.field(metadata={"help": "A model."})
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1], metadata={"help": "Seeds."})
    fast: bool = dataclasses.field(default=False, metadata={"help": "Go fast."})
    mode: str = dataclasses.field(default="a", metadata={"help": "A mode.", "choices": ["a", "b"]})


def test_a_config_is_the_parsers_defaults_and_the_flags_override_it_in_one_parse(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("model: m\nseeds: [2, 3]\nfast: true\nmode: b\n")
    parser = CommandParser((Required,), prog="required")
    (args,) = parser.parse_line([str(config), "--seeds", "4", "--mode", "a"])
    assert (args.model, args.seeds, args.fast, args.mode) == ("m", [4], True, "a")
    assert "(required)" not in parser.format_help().split("--model", 1)[1].split("\n", 1)[0]  # the config sets it
    assert CommandParser((Required,)).parse_settings([str(config), "--seeds", "5"]) == {
        "model": "m", "seeds": [5], "fast": True, "mode": "b"
    }  # fmt: skip
    config.write_text("model: m\nmode: c\n")
    with pytest.raises(ValueError, match=rf"^config file {config}: --mode: invalid choice 'c'; choose from a, b$"):
        CommandParser((Required,)).parse_line([str(config)])
    with pytest.raises(SystemExit) as stopped:
        CommandParser((Required,), prog="required").parse_line(["--seeds", "1"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "error: the following arguments are required: --model\n"


# ------------------------------------------------------------------------------------------ packaged configs
def test_a_packaged_config_is_named_by_name_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    packaged = packaged_configs_dir() / "demo_minilm.yaml"
    assert packaged.is_file()
    for name in ("demo_minilm", "demo_minilm.yaml", "configs/demo_minilm.yaml"):
        assert resolve_config(name) == packaged
    own = tmp_path / "configs" / "demo_minilm.yaml"  # a file of that path wins over the packaged config
    own.parent.mkdir()
    own.write_text("max_steps: 3\n")
    assert resolve_config("configs/demo_minilm.yaml") == Path("configs/demo_minilm.yaml")
    assert read_config("configs/demo_minilm.yaml") == {"max_steps": 3}
    assert read_config("demo_minilm")["max_steps"] == 160


def test_the_packaged_configs_are_the_repositorys(tmp_path):
    assert sorted(p.name for p in packaged_configs_dir().glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "configs").glob("*.yaml")
    )


def test_pretrain_runs_a_packaged_config_with_flags_over_it(tmp_path, monkeypatch, tiny_model_dir):
    runs = []
    monkeypatch.setattr("bioptimus_hf.pretraining.run.run_pretraining", lambda *arguments: runs.append(arguments))
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a line\n")
    commands.main(
        ["pretrain", "demo_minilm", "--model_name_or_path", str(tiny_model_dir), "--train_file", "corpus.txt"]
        + ["--output_dir", "out", "--max_steps", "8"]
    )
    (arguments,) = runs
    by_field = {field: args for args in arguments for field in vars(args)}  # whichever dataclass holds each flag
    model_args, data_args, training_args = by_field["model_name_or_path"], by_field["train_file"], arguments[-1]
    assert model_args.model_name_or_path == str(tiny_model_dir) and data_args.train_file == ["corpus.txt"]
    assert (training_args.output_dir, training_args.max_steps) == ("out", 8)
    assert (training_args.learning_rate, data_args.max_eval_samples) == (1e-4, 128)  # from the config


def test_the_blurb_default_ner_config_is_found_from_any_directory(tmp_path, monkeypatch):
    from bioptimus_hf.blurb.benchmark_config import DEFAULT_NER_CONFIG, BenchmarkArguments

    monkeypatch.chdir(tmp_path)
    args = BenchmarkArguments(model_name_or_path="m", output_dir="out", ner_dir=str(tmp_path))
    assert args.ner_config == DEFAULT_NER_CONFIG
    assert read_config(args.ner_config)["num_train_epochs"] == 20


# ------------------------------------------------------------------------------------------ relative paths
def test_relative_paths_in_a_config_are_relative_to_its_folder(tmp_path, monkeypatch):
    folder = tmp_path / "experiment"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "corpus.txt").write_text("text\n")
    (folder / "tokenizer").mkdir()
    (folder / "run.yaml").write_text(
        "train_file: [data/corpus.txt, data/missing.txt]\n"
        "model_name_or_path: bert-base-uncased\n"  # a Hub id: no such folder beside the config
        "tokenizer_name: tokenizer\n"  # a folder beside the config
        "curriculum: bioptimus\n"
        "output_dir: outputs/run\n"  # an output: relative to the working directory
        "pretraining_args: {validation_file: data/corpus.txt}\n"
        "arms: [{name: a, init_corpus_files: [data/corpus.txt]}]\n"
    )
    monkeypatch.chdir(tmp_path)
    assert read_config("experiment/run.yaml") == {
        "train_file": ["experiment/data/corpus.txt", "experiment/data/missing.txt"],
        "model_name_or_path": "bert-base-uncased",
        "tokenizer_name": "experiment/tokenizer",
        "curriculum": "bioptimus",
        "output_dir": "outputs/run",
        "pretraining_args": {"validation_file": "experiment/data/corpus.txt"},
        "arms": [{"name": "a", "init_corpus_files": ["experiment/data/corpus.txt"]}],
    }
    absolute = read_config(str(folder / "run.yaml"))
    assert absolute["train_file"][0] == str(folder / "data" / "corpus.txt")


def test_a_path_found_only_from_the_working_directory_is_read_beside_the_config(tmp_path, monkeypatch):
    (tmp_path / "configs").mkdir()
    (tmp_path / "corpus.txt").write_text("text\n")
    (tmp_path / "configs" / "run.yaml").write_text("train_file: corpus.txt\n")
    monkeypatch.chdir(tmp_path)
    assert read_config("configs/run.yaml") == {"train_file": "configs/corpus.txt"}


def test_every_path_flag_of_every_command_is_an_input_or_an_output():
    """The lists of utils/config_files.py name every flag that looks like a path, each in one list."""
    from transformers import TrainingArguments

    looks_like_a_path = re.compile(r"(_file|_files|_dir|_dirs|_config|_path|_corpus|_results)$|^tokenizer_name$")
    classified = INPUT_PATH_FIELDS | NAME_OR_PATH_FIELDS | OUTPUT_PATH_FIELDS
    assert len(classified) == len(INPUT_PATH_FIELDS) + len(NAME_OR_PATH_FIELDS) + len(OUTPUT_PATH_FIELDS)
    # VERSION=PATH pairs; a boolean; a field of publish's report, not a flag
    not_paths = {"ner_results", "overwrite_output_dir", "staged_dir"}
    names = {
        f.name for command in COMMANDS.values() for kind in argument_types(command) for f in dataclasses.fields(kind)
    }
    assert {"train_file", "data_dir", "corpus_files", "base_tokenizer", "ner_config", "input_file"} <= names
    names -= {f.name for f in dataclasses.fields(TrainingArguments)} - classified  # transformers' own, as listed
    unclassified = {n for n in names if looks_like_a_path.search(n)} - classified - not_paths
    assert not unclassified


# ------------------------------------------------------------------------------------------ names in the docs
def test_the_readme_lists_the_tables_commands():
    text = " ".join((ROOT / "README.md").read_text().split())
    listed = re.search(r"The commands \(`bioptimus --help`.*?\): (.*?)\. Every command takes a config", text)
    assert listed, "the README's list of commands is gone"
    assert re.findall(r"`([a-z-]+)`", listed.group(1)) == list(COMMANDS)


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_the_docs_name_only_commands_that_exist(path):
    wrong = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        # a console script other than `bioptimus`: run with a flag, alone in code, or first on a command line
        for match in re.finditer(r"(?:^|`|\$ )(bioptimus-[a-z][a-z-]*[a-z])(?=`| --| \S+ --)", line):
            wrong.append(f"{path.name}:{number}: {match.group(1)}")
        for match in re.finditer(r"(?<![\w/.-])bioptimus ([a-z][a-z-]*[a-z])\b", line):
            if match.group(1) not in COMMANDS:
                wrong.append(f"{path.name}:{number}: bioptimus {match.group(1)}")
    assert not wrong


def test_bioptimus_config_parses_with_plain_hfargumentparser_and_groups_its_help_with_ours():
    from transformers import HfArgumentParser

    from bioptimus_hf import BioptimusConfig

    (config,) = HfArgumentParser(BioptimusConfig).parse_args_into_dataclasses(
        ["--output_dir", "out", "--init_strategy", "scratch", "--max_seq_length", "64"]
    )
    assert (config.init_strategy, config.max_seq_length) == ("scratch", 64)
    titles = [group.title for group in CommandParser((BioptimusConfig,))._action_groups]
    assert [title for title in titles if title in set(BioptimusConfig.help_groups.values())] == [
        "initialisation",
        "corpus",
        "curriculum",
        "lexical warm-up",
        "model",
        "releases",
        "masked LM",
    ]
