"""The ``bioptimus`` command: a subcommand per stage running its wing with the parsed dataclasses, the same as its
script, one console script, one line for bad input in every script, and the NER seed loop leaving its caller's
arguments as they were. Nothing is installed: ``bioptimus`` runs in-process and as ``python -m bioptimus_hf.commands``."""

import configparser
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import run_ner
import run_pretraining
from bioptimus_hf import commands
from bioptimus_hf.ner.run import fine_tune_ner
from bioptimus_hf.pretraining import run as pretraining_run
from bioptimus_hf.pretraining.bioptimus_config import BioptimusConfig
from bioptimus_hf.utils.cli import exit_on_bad_input
from bioptimus_hf.utils.errors import BadInput, bad_input
from helpers import python_path
from helpers.ner import build_tiny_bert, write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")


ROOT = Path(__file__).resolve().parent.parent
STAGES = [
    "prepare-corpus",
    "train-tokenizer",
    "init-embeddings",
    "pretrain",
    "publish",
    "ner",
    "tag",
    "compare",
    "blurb-task",
    "blurb",
    "blurb-compare",
    "distill",
    "remove-layers",
    "task-difficulty",
    "study",
    "plot",
]


def run_python(*args, cwd):
    """``python ARGS`` in a fresh process that imports this checkout (nothing installed)."""
    env = dict(os.environ, PYTHONPATH=python_path(ROOT))
    return subprocess.run(
        [sys.executable, *map(str, args)], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


# ------------------------------------------------------------------------------------------ bioptimus
def test_help_lists_every_stage_with_one_line(capsys):
    assert commands.main(["--help"]) is None
    out = capsys.readouterr().out
    listed = [line.split(maxsplit=1) for line in out.splitlines() if line.startswith("  ") and "  " in line.strip()]
    assert [name for name, _ in listed] == STAGES
    assert [summary for _, summary in listed] == [command.summary for command in commands.COMMANDS.values()]
    with pytest.raises(SystemExit) as stopped:  # no command: the same list on stderr, and a usage error's status
        commands.main([])
    assert stopped.value.code == 2 and capsys.readouterr().err == commands.usage() + "\n"


def test_an_unknown_command_is_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        commands.main(["pretrian", "configs/demo_minilm.yaml"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        "error: unknown command 'pretrian'; did you mean pretrain? (the commands: " + ", ".join(STAGES) + ")\n"
    )
    result = run_python("-m", "bioptimus_hf.commands", "nosuch", cwd=ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: unknown command 'nosuch'; bioptimus --help lists them (the commands: {', '.join(STAGES)})"
    ]


def test_a_commands_help_and_errors_name_it(tmp_path):
    result = run_python("-m", "bioptimus_hf.commands", "ner", "--help", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("usage: bioptimus ner [config.yaml] [--flag value ...]")
    assert "--window_stride" in result.stdout and "--seeds" in result.stdout


@pytest.mark.parametrize("name", STAGES)
def test_each_command_runs_its_wing_with_the_parsed_dataclasses(name, monkeypatch):
    command, calls = commands.COMMANDS[name], []
    monkeypatch.setattr(
        commands, "parse", lambda *arguments: ("parsed",) if arguments[:2] == (name, ["run.yaml"]) else 0
    )
    monkeypatch.setattr(command.run.replace(":", "."), lambda *arguments: calls.append(arguments) or "a value")
    assert commands.main([name, "run.yaml"]) is None  # None: a console script's exit status 0
    assert calls == [("parsed", ["run.yaml"]) if command.line else ("parsed",)]
    assert commands.run(name, ["run.yaml"]) == "a value"


def test_bioptimus_is_the_one_console_script():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    scripts = [line for line in config["options.entry_points"]["console_scripts"].splitlines() if line]
    assert scripts == ["bioptimus = bioptimus_hf.commands:main"]


def test_nothing_in_the_package_reads_or_writes_the_programs_name():
    uses = [str(path) for path in (ROOT / "bioptimus_hf").rglob("*.py") if "sys.argv[0]" in path.read_text()]
    assert uses == []


SCRIPTS = {"run_pretraining": "pretrain", "run_ner": "ner", "run_blurb": "blurb-task", "run_distillation": "distill"}
SCRIPTS["run_study"] = "study"


def test_each_script_is_its_command(monkeypatch):
    assert sorted(path.stem for path in ROOT.glob("run_*.py")) == sorted(SCRIPTS)
    calls = []
    monkeypatch.setattr(commands, "run", lambda *arguments, **options: calls.append((arguments, options)))
    for script, name in SCRIPTS.items():
        importlib.import_module(script).main(["--seed", "3"])
        assert calls.pop() == ((name, ["--seed", "3"]), {"prog": f"{script}.py"})
        assert re.search(
            rf'commands\.main\(\["{name}", \*sys\.argv\[1:\]\], prog="{script}.py"\)',
            (ROOT / f"{script}.py").read_text(),
        )


# ------------------------------------------------------------------------------------------ same main, same run
def test_bioptimus_pretrain_and_the_script_parse_the_same_run(tmp_path, monkeypatch, tiny_model_dir):
    config = tmp_path / "run.yaml"
    config.write_text(
        f"model_name_or_path: {tiny_model_dir}\ntrain_file: [{tmp_path / 'corpus.txt'}]\n"
        f"output_dir: {tmp_path / 'out'}\nmax_steps: 8\nlearning_rate: 5.0e-4\n"
    )
    runs = []
    monkeypatch.setattr(pretraining_run, "run_pretraining", lambda *arguments: runs.append(arguments))
    commands.main(["pretrain", str(config), "--seed", "7"])
    run_pretraining.main([str(config), "--seed", "7"])
    assert len(runs) == 2 and runs[0] == runs[1]
    model_args, config = runs[0]
    assert (model_args.model_name_or_path, config.seed, config.max_steps) == (str(tiny_model_dir), 7, 8)
    assert isinstance(config, BioptimusConfig) and config.learning_rate == 5e-4


def test_bad_input_is_the_same_one_line_through_the_command_and_the_script(tmp_path, tiny_model_dir):
    missing = tmp_path / "no_corpus.txt"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"model_name_or_path: {tiny_model_dir}\ntrain_file: [{missing}]\n"
        f"output_dir: {tmp_path / 'out'}\nmax_steps: 8\nreport_to: none\n"
    )
    by_command = run_python("-m", "bioptimus_hf.commands", "pretrain", config, cwd=tmp_path)
    by_script = run_python(ROOT / "run_pretraining.py", config, cwd=tmp_path)
    for result in (by_command, by_script):
        assert result.returncode == 1, result.stderr[-2000:]
        assert result.stderr.splitlines()[-1] == f"error: corpus file {missing} does not exist"
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------ NER bad input
def test_run_ner_bad_input_ends_with_one_line_naming_the_file(tmp_path):
    missing = tmp_path / "NCBI-disease-IOB"
    result = run_python(
        ROOT / "run_ner.py",
        "--model_name_or_path",
        "acme/ner-model",  # a Hub id: the data is checked before any model loads
        "--data_dir",
        missing,
        "--output_dir",
        tmp_path / "out",
        "--use_cpu",
        "true",
        "--report_to",
        "none",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {missing}: missing train.tsv (need train.tsv, devel.tsv, test.tsv)"]


@pytest.mark.parametrize(
    "train_tsv, message",
    [
        (
            "aspirin\tB-Chemical\ncancer\n",
            "train.tsv:2: expected 2 tab-separated columns (token<TAB>label), found 1: 'cancer'",
        ),
        (
            "aspirin\tB-Chemical\ncancer\tX-Disease\n",
            "train.tsv:2: unknown tag prefix in 'X-Disease'; expected O or B-/I-/E-/S-/L-/U-",
        ),
    ],
)
def test_a_malformed_conll_line_or_an_unknown_label_is_one_line(tmp_path, train_tsv, message):
    data = Path(write_dataset_dir(str(tmp_path / "data"), sizes=(4, 2, 2)))
    (data / "train.tsv").write_text(train_tsv)
    with pytest.raises(SystemExit) as stopped:
        run_ner.main(
            [
                "--model_name_or_path",
                "acme/ner-model",
                "--data_dir",
                str(data),
                "--output_dir",
                str(tmp_path / "out"),
                "--use_cpu",
                "true",
                "--report_to",
                "none",
            ]
        )
    assert stopped.value.code == f"error: {data / message}"


def test_exit_on_bad_input_says_the_message_and_leaves_other_errors_alone():
    with pytest.raises(SystemExit) as stopped:
        with exit_on_bad_input():
            raise FileNotFoundError("--train_file corpus.txt: no such file")
    assert stopped.value.code == "error: --train_file corpus.txt: no such file" and stopped.value.__cause__ is None

    @exit_on_bad_input(KeyError)
    def command(error):
        raise error

    for _ in range(2):  # a decorated command can run again
        with pytest.raises(SystemExit, match=r"^error: 'flag'$"):
            command(KeyError("flag"))
    with pytest.raises(ValueError, match="a bug"):  # not the errors it was given: the traceback stays
        command(ValueError("a bug"))


def test_the_library_marks_bad_input_and_the_command_ends_it_in_one_line():
    """A checking step raises BadInput (message kept, the refusal chained); the command makes it one line, exit
    status 1; any other error, a ValueError of a bug included, keeps its traceback."""
    refusal = FileExistsError("--output_dir out holds a run")
    with pytest.raises(BadInput, match="^--output_dir out holds a run$") as marked:
        with bad_input(RuntimeError, FileExistsError):
            raise refusal
    assert marked.value.__cause__ is refusal and isinstance(marked.value, ValueError)
    with pytest.raises(KeyError):  # not one of the errors the step refuses
        with bad_input(FileExistsError):
            raise KeyError("a bug")
    with pytest.raises(BadInput) as again, bad_input(TypeError):  # already marked: passes through as it is
        raise BadInput("--seed: not a number")
    assert again.value.__cause__ is None

    def run(error):
        with exit_on_bad_input(BadInput):
            with bad_input():
                raise error

    with pytest.raises(SystemExit) as stopped:
        run(ValueError("--window_stride 40 must be in [0, 12)"))
    assert stopped.value.code == "error: --window_stride 40 must be in [0, 12)" and stopped.value.__cause__ is None
    with pytest.raises(ValueError, match="a bug"):  # a ValueError the library did not mark: the traceback stays
        with exit_on_bad_input(BadInput):
            raise ValueError("a bug")


# ------------------------------------------------------------------------------------------ the NER seed loop
def test_fine_tune_ner_trains_each_seed_under_a_copy_of_the_callers_arguments(tmp_path):
    model = build_tiny_bert(str(tmp_path / "model"))
    data = write_dataset_dir(str(tmp_path / "data"), sizes=(16, 6, 6))
    output = tmp_path / "out"
    arguments = run_ner.parse_args(
        [
            "--model_name_or_path",
            model,
            "--data_dir",
            data,
            "--output_dir",
            str(output),
            "--seeds",
            "3",
            "5",
            "--seed",
            "42",
            "--max_steps",
            "2",
            "--save_model",
            "false",
            "--save_strategy",
            "no",
            "--report_to",
            "none",
            "--use_cpu",
            "true",
            "--disable_tqdm",
            "true",
            "--max_seq_length",
            "16",
            "--window_stride",
            "4",
        ]
    )
    training_args = arguments[-1]
    results = fine_tune_ner(*arguments)
    assert (training_args.seed, training_args.output_dir) == (42, str(output))  # the caller's, untouched
    assert results["seeds"] == [3, 5] and [run["seed"] for run in results["per_seed"]] == [3, 5]
    for seed in (3, 5):
        assert (output / f"seed_{seed}" / "seed_results.json").is_file()
        assert (output / f"seed_{seed}" / "test_predictions.conll").is_file()
    assert sorted(p.name for p in output.iterdir() if p.is_dir()) == ["seed_3", "seed_5"]


# ------------------------------------------------------------------------------------------ --help stays light
HELP_PROBE = """
import contextlib, io, sys
from bioptimus_hf import commands
for name in sys.argv[1:]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            commands.main([name, "--help"])
        except SystemExit:
            pass
runs = ("run", "bioptimus_trainer", "tagging_run", "fine_tuning", "embedding_init", "distillation_trainer")
print(sorted(m for m in sys.modules if m == "datasets" or (m.startswith("bioptimus_hf.") and m.split(".")[-1] in runs)))
"""


def test_a_commands_help_loads_neither_datasets_nor_the_run(tmp_path):
    """Commands import their settings (config modules) at module level and the run only when they run: ``--help``
    of every stage's command loads neither ``datasets`` nor a wing's run module. (``blurb`` and ``blurb-task``
    import the BLURB wing's runs at module level.)"""
    light = [name for name in STAGES if name not in ("blurb", "blurb-task")]
    result = run_python("-c", HELP_PROBE, *light, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
