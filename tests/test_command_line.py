"""The command line as a user meets it: the registry's help (plain text, a description and a runnable example per
command, the config in the usage line, each flag and default once), packaged configs named by name from any
directory, relative paths in a config resolved against its folder, old spellings still parsed, and the README and
docs naming only commands and console scripts that exist. Bad inputs and their one-line errors:
tests/test_cli_errors.py."""

import dataclasses
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bioptimus_hf.commands import config_parser, dispatch
from bioptimus_hf.commands.config_parser import CommandParser, HelpFormatter, parse_args
from bioptimus_hf.utils.config_files import (
    INPUT_PATH_FIELDS,
    NAME_OR_PATH_FIELDS,
    OUTPUT_PATH_FIELDS,
    packaged_configs_dir,
    read_config,
    resolve_config,
)
from helpers import python_path


pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------------ the registry and help
def test_bioptimus_help_imports_neither_torch_nor_transformers():
    code = (
        "import sys; from bioptimus_hf.commands import dispatch; dispatch.main(['--help']); "
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


@pytest.mark.parametrize("name", list(dispatch.COMMANDS))
def test_every_command_has_a_plain_paragraph_and_an_example_of_itself(name):
    command = dispatch.COMMANDS[name]
    assert command.summary and command.description and command.example
    assert "\n" not in command.description and not re.search(r"``|:(func|mod|class|data):|::", command.description)
    assert command.example.startswith(f"bioptimus {name} ")


class Parsed(Exception):
    """Raised in place of running a command, once its line is parsed."""


@pytest.mark.parametrize("name", list(dispatch.COMMANDS))
def test_every_example_parses_with_its_commands_flags(name, monkeypatch):
    parse = CommandParser.parse_args_into_dataclasses

    def parse_then_stop(self, *args, **kwargs):
        raise Parsed(parse(self, *args, **kwargs))

    def checked_then_stop(parsed):  # a command that builds its dataclasses itself (blurb-task: over the recipe)
        raise Parsed(parsed)

    monkeypatch.setattr(CommandParser, "parse_args_into_dataclasses", parse_then_stop)
    monkeypatch.setattr(config_parser, "check_model_references", checked_then_stop)
    monkeypatch.chdir(ROOT)  # the examples name ../shared/data as the README does
    with pytest.raises(Parsed):
        dispatch.main(shlex.split(dispatch.COMMANDS[name].example)[1:])


@pytest.mark.parametrize("name", list(dispatch.COMMANDS))
def test_a_commands_help_reads_as_written(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "102")  # 100 columns of help
    with pytest.raises(SystemExit) as stopped:
        dispatch.main([name, "--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    command = dispatch.COMMANDS[name]
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
    parser = CommandParser((Tiny,), prog="tiny", usage="%(prog)s [config.yaml]", formatter_class=HelpFormatter)
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


# ------------------------------------------------------------------------------------------ old spellings
def test_old_spellings_still_parse(tmp_path):
    (remove,) = parse_args(
        (dispatch_arguments("remove-layers"),),
        ["--model-name-or-path", str(tmp_path), "--output-dir", "out", "--keep_layers", "0", "1"],
    )
    assert (remove.model_name_or_path, remove.output_dir, remove.keep_layers) == (str(tmp_path), "out", [0, 1])


def dispatch_module(name):
    import importlib

    return importlib.import_module(f"bioptimus_hf.commands.{dispatch.COMMANDS[name].module}")


def dispatch_arguments(name):
    return dispatch_module(name).RemoveLayersArguments


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
    dispatch.main(
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


def test_a_path_found_only_from_the_working_directory_still_works_with_a_warning(tmp_path, monkeypatch):
    (tmp_path / "configs").mkdir()
    (tmp_path / "corpus.txt").write_text("text\n")
    (tmp_path / "configs" / "run.yaml").write_text("train_file: corpus.txt\n")
    monkeypatch.chdir(tmp_path)
    with pytest.warns(FutureWarning, match="corpus.txt is found relative to the working directory"):
        assert read_config("configs/run.yaml") == {"train_file": "corpus.txt"}


def test_every_path_flag_of_every_command_is_an_input_or_an_output():
    """The lists of utils/config_files.py name every flag that looks like a path, each in one list."""
    from transformers import TrainingArguments

    looks_like_a_path = re.compile(r"(_file|_files|_dir|_dirs|_config|_path|_corpus|_results)$|^tokenizer_name$")
    classified = INPUT_PATH_FIELDS | NAME_OR_PATH_FIELDS | OUTPUT_PATH_FIELDS
    assert len(classified) == len(INPUT_PATH_FIELDS) + len(NAME_OR_PATH_FIELDS) + len(OUTPUT_PATH_FIELDS)
    # VERSION=PATH pairs; a boolean; a field of publish's report, not a flag
    not_paths = {"ner_results", "overwrite_output_dir", "staged_dir"}
    names = set()
    for name in dispatch.COMMANDS:
        module = dispatch_module(name)
        for value in vars(module).values():
            for kind in value if isinstance(value, tuple) else (value,):
                if isinstance(kind, type) and dataclasses.is_dataclass(kind):
                    names |= {f.name for f in dataclasses.fields(kind)}
    assert {"train_file", "data_dir", "corpus_files", "base_tokenizer", "ner_config", "input_file"} <= names
    names -= {f.name for f in dataclasses.fields(TrainingArguments)} - classified  # transformers' own, as listed
    unclassified = {n for n in names if looks_like_a_path.search(n)} - classified - not_paths
    assert not unclassified


# ------------------------------------------------------------------------------------------ names in the docs
def test_the_readme_lists_the_registrys_commands():
    text = " ".join((ROOT / "README.md").read_text().split())
    listed = re.search(r"The commands \(`bioptimus --help`.*?\): (.*?)\. Each is also the console script", text)
    assert listed, "the README's list of commands is gone"
    assert re.findall(r"`([a-z-]+)`", listed.group(1)) == list(dispatch.COMMANDS)
    assert "`bioptimus-<command>`" in text


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_the_docs_name_only_commands_and_console_scripts_that_exist(path):
    scripts = {dispatch.console_script(name) for name in dispatch.COMMANDS}
    wrong = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        # a console script: run with a flag, alone in code, or first on a command line
        for match in re.finditer(r"(?:^|`|\$ )(bioptimus-[a-z][a-z-]*[a-z])(?=`| --| \S+ --)", line):
            if match.group(1) not in scripts:
                wrong.append(f"{path.name}:{number}: {match.group(1)}")
        for match in re.finditer(r"(?<![\w/.-])bioptimus ([a-z][a-z-]*[a-z])\b", line):
            if match.group(1) not in dispatch.COMMANDS:
                wrong.append(f"{path.name}:{number}: bioptimus {match.group(1)}")
    assert not wrong
