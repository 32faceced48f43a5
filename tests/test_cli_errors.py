"""Every bad input tried on the command line, with the one line it ends with and its exit status: 2 for a command
line that cannot be parsed (an unknown flag or command, a bad choice or value, a missing flag), 1 for bad input (a
config file missing or malformed, a model that is neither a directory nor a Hub id, data that is not there).

Each row runs ``bioptimus ARGV`` in this process, as the console script does: a ``SystemExit`` whose code is a
message is what the interpreter prints and ends with status 1; a usage error has printed its line on stderr and
carries status 2. Cheap checks come before expensive loads: the models named below do not exist, so a row whose
message is about something else shows that thing was checked first.
"""

from pathlib import Path

import pytest

from bioptimus_hf import commands
from bioptimus_hf.utils.config_files import packaged_config_names


pytestmark = pytest.mark.usefixtures("one_thread")

NEITHER = "neither a directory nor a Hub id (no such directory; a Hub id is 'name' or 'namespace/name')"
PACKAGED = ", ".join(packaged_config_names())


def files(tmp: Path) -> dict[str, str]:
    """The paths the rows use: a corpus, an empty corpus, a model folder that does not exist, broken configs."""
    (tmp / "corpus.txt").write_text("Mutations in BRCA1 cause breast cancer.\n" * 20)
    (tmp / "empty.txt").write_text("\n\n")
    (tmp / "bad.yaml").write_text("learning_rate: 1.0e-4\nseeds: [1, 2\nmax_steps: 3\n")
    (tmp / "bad.json").write_text('{"learning_rate": 1e-4,\n "max_steps": }\n')
    (tmp / "list.yaml").write_text("- learning_rate\n- 1.0e-4\n")
    (tmp / "typo.yaml").write_text("num_train_epoch: 1\n")
    return {
        "corpus": str(tmp / "corpus.txt"),
        "empty": str(tmp / "empty.txt"),
        "no_model": str(tmp / "releases" / "v0.4"),
        "out": str(tmp / "out"),
        "tmp": str(tmp),
    }


# (what is wrong, argv from files(tmp), exit status, the line it ends with, {placeholders} from files(tmp))
ROWS = [
    (
        "a typo'd flag, the nearest real one named (no prefix matching)",
        "ner --model_name_or_path m --data_dir {tmp} --output_dir {out} --num_train_epoch 1",
        2,
        "error: unknown flag --num_train_epoch; did you mean --num_train_epochs?",
    ),
    (
        "a flag no flag is near",
        "remove-layers --model_name_or_path m --output_dir {out} --frobnicate 3",
        2,
        "error: unknown flag --frobnicate; bioptimus remove-layers --help lists the flags",
    ),
    (
        "a bad choice: the valid ones, no usage dump",
        "pretrain --model_name_or_path m --output_dir {out} --masking_stream foo",
        2,
        "error: --masking_stream: invalid choice 'foo'; choose from keyed, sequential",
    ),
    (
        "a value of the wrong type",
        "pretrain --model_name_or_path m --output_dir {out} --max_steps many",
        2,
        "error: --max_steps: invalid int value: 'many'",
    ),
    (
        "a required flag missing",
        "remove-layers --output_dir {out}",
        2,
        "error: the following arguments are required: --model_name_or_path",
    ),
    (
        "a value where a flag should be",
        "remove-layers --model_name_or_path m --output_dir {out} --keep_layers 0 1 --overwrite_output_dir true extra",
        2,
        "error: unexpected value 'extra': only the config may come before the flags",
    ),
    (
        "a boolean flag given something else",
        "remove-layers --model_name_or_path m --output_dir {out} --overwrite_output_dir maybe",
        2,
        "error: --overwrite_output_dir: Truthy value expected: got maybe but expected one of yes/no, true/false, "
        "t/f, y/n, 1/0 (case insensitive).",
    ),
    (
        "an unknown command",
        "pretrian demo_minilm",
        2,
        "error: unknown command 'pretrian'; did you mean pretrain? (the commands: "
        + ", ".join(commands.COMMANDS)
        + ")",
    ),
    (
        "a config file that does not exist",
        "ner {tmp}/ner.yaml --model_name_or_path m",
        1,
        "error: config file {tmp}/ner.yaml: no such file, nor a packaged config (packaged: " + PACKAGED + ")",
    ),
    (
        "a yaml config with a syntax error: its line and column",
        "ner {tmp}/bad.yaml",
        1,
        "error: config file {tmp}/bad.yaml, line 3, column 10: expected ',' or ']', but got ':'",
    ),
    (
        "a json config with a syntax error: its line and column",
        "ner {tmp}/bad.json",
        1,
        "error: config file {tmp}/bad.json, line 2, column 15: Expecting value",
    ),
    (
        "a config that is not a mapping",
        "ner {tmp}/list.yaml",
        1,
        "error: config file {tmp}/list.yaml: must hold a mapping of flag names to values, not a list",
    ),
    (
        "a config key that is no flag: the file and the nearest key",
        "ner {tmp}/typo.yaml --model_name_or_path m",
        1,
        "error: config file {tmp}/typo.yaml: unknown key num_train_epoch; did you mean num_train_epochs?",
    ),
    (
        "pretrain: a model folder that does not exist",
        "pretrain --model_name_or_path {no_model} --train_file {corpus} --output_dir {out}",
        1,
        "error: --model_name_or_path {no_model}: " + NEITHER,
    ),
    (
        "tag: a model folder that does not exist",
        "tag --model_name_or_path {no_model} --text x",
        1,
        "error: --model_name_or_path {no_model}: " + NEITHER,
    ),
    (
        "train-tokenizer: a base tokenizer that does not exist",
        "train-tokenizer --train_files {corpus} --base_tokenizer {no_model} --output_dir {out}",
        1,
        "error: --base_tokenizer {no_model}: " + NEITHER,
    ),
    (
        "distill: a teacher that does not exist",
        "distill --teacher_model_name_or_path {no_model} --train_file {corpus} --output_dir {out} "
        "--student_layers 0 1",
        1,
        "error: --teacher_model_name_or_path {no_model}: " + NEITHER,
    ),
    (
        "ner: a model that is not a Hub id either (an empty name)",
        "ner --model_name_or_path '' --data_dir {tmp} --output_dir {out}",
        1,
        "error: --model_name_or_path '': " + NEITHER,
    ),
    (
        "task-difficulty: an empty corpus, found before any model loads",
        "task-difficulty --model_name_or_path {no_model} --corpus_files {empty}",
        1,
        "error: corpus file {empty} is empty (no non-blank line)",
    ),
    (
        "task-difficulty: a LABEL=PATH model that does not exist",
        "task-difficulty --model_name_or_path v0.4={no_model} --corpus_files {corpus}",
        1,
        "error: --model_name_or_path {no_model}: " + NEITHER,
    ),
    (
        "blurb: a NER config that is neither a file nor a packaged config",
        "blurb --model_name_or_path m --output_dir {out} --ner_dir {tmp} --ner_config {tmp}/ner.yaml",
        1,
        "error: --ner_config {tmp}/ner.yaml: no such file, nor a packaged config (packaged: " + PACKAGED + ")",
    ),
    (
        "a value an arguments dataclass refuses",
        "blurb --model_name_or_path m --output_dir {out} --blurb_dir {tmp} --seeds 1 1",
        1,
        "error: --seeds 1 1: a seed is given twice",
    ),
]


def outcome(argv: list[str], capsys) -> tuple[int, list[str]]:
    """(exit status, the lines the user sees on stderr) of ``bioptimus ARGV``."""
    with pytest.raises(SystemExit) as stopped:
        commands.main(argv)
    code = stopped.value.code
    printed = capsys.readouterr().err.splitlines()
    if isinstance(code, str):  # the interpreter prints the message and exits with status 1
        return 1, printed + [code]
    return code, printed


@pytest.mark.parametrize("what, argv, status, message", ROWS, ids=[row[0] for row in ROWS])
def test_bad_input_ends_in_one_line(tmp_path, capsys, monkeypatch, what, argv, status, message):
    import shlex

    monkeypatch.chdir(tmp_path)
    places = files(tmp_path)
    got = outcome([arg.format(**places) for arg in shlex.split(argv)], capsys)
    assert got == (status, [message.format(**places)])
    assert not (tmp_path / "out").exists()  # refused before anything was written
