"""No Hub token is written, printed or uploaded: the redaction (``bioptimus_hf.utils.secrets``) on its own, then
every command that takes a token, given each way a user gives one (``--hub_token``, ``HF_TOKEN``, ``hub_token:``
in a config file), against the loopback Hub; every file written, every upload body and all output are searched
for the token."""

import dataclasses
import logging
import pickle
import socket
from functools import partial
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
import yaml
from transformers import TrainingArguments

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.utils import secrets
from bioptimus_hf.utils.hub_settings import take_hub_settings
from bioptimus_hf.utils.secrets import REDACTED, is_secret_name, redact, redact_argv, redact_text
from helpers import corpus_lines
from helpers import flags as mapping_to_argv
from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert, quick_ner_flags, write_dataset_dir


pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning"),  # huggingface_hub's LFS upload
]

SENTINEL = "hf_SENTINELtokenNeverWritten_7319"
WAYS = ("flag", "env", "config")


# ------------------------------------------------------------------------------- the redaction
@pytest.mark.parametrize(
    "name, secret",
    [
        ("hub_token", True),
        ("HF_TOKEN", True),
        ("token", True),
        ("--hub_token", True),
        ("hubToken", True),
        ("db_password", True),
        ("client_secret_key", True),
        ("wandb_api_key", True),
        ("aws_credentials", True),
        ("key", False),
        ("mask_token", False),
        ("max_contexts_per_token", False),
        ("tokenizer_name", False),
        ("tokens", False),
        ("model_name", False),
    ],
)
def test_which_names_hold_a_credential(name, secret):
    assert is_secret_name(name) is secret


def test_redact_replaces_secrets_in_mappings_nested_and_keeps_the_rest(monkeypatch):
    monkeypatch.setattr(secrets, "_remembered", set())
    monkeypatch.delenv("HF_TOKEN", raising=False)
    value = {
        "hub_token": "abc123xyz",
        "HF_TOKEN": "abc123xyz",
        "hub_token_unset": None,
        "nested": {"password": "p4ssw0rd!", "learning_rate": 0.1, "mask_token": "[MASK]", "per_token": 3},
        "list": [{"api_token": "zzz999yyy"}, "--hub_token", "abc123xyz", "--hub_token=abc123xyz", "plain"],
        "max_contexts_per_token": 5,
    }
    assert redact(value) == {
        "hub_token": REDACTED,
        "HF_TOKEN": REDACTED,
        "hub_token_unset": None,
        "nested": {"password": REDACTED, "learning_rate": 0.1, "mask_token": "[MASK]", "per_token": 3},
        "list": [{"api_token": REDACTED}, "--hub_token", REDACTED, f"--hub_token={REDACTED}", "plain"],
        "max_contexts_per_token": 5,
    }


def test_redact_of_a_dataclass_and_of_training_arguments(monkeypatch, tmp_path):
    @dataclasses.dataclass
    class Settings:
        hub_token: str = "t0k3n-value"
        steps: int = 3

    assert redact(Settings()) == {"hub_token": REDACTED, "steps": 3}
    args = TrainingArguments(output_dir=str(tmp_path), hub_token="t0k3n-value", report_to="none")
    redacted = redact(args)
    assert redacted["hub_token"] == REDACTED and redacted["output_dir"] == str(tmp_path)
    assert "t0k3n-value" not in repr(args) and "t0k3n-value" not in args.to_json_string()  # transformers masks it


def test_argv_and_text_forms(monkeypatch):
    monkeypatch.setattr(secrets, "_remembered", set())
    monkeypatch.delenv("HF_TOKEN", raising=False)
    argv = ["run.py", "--hub_token", "T0KEN123", "--output_dir", "out", "--hub_token=T0KEN123", "--max_per_token", "4"]
    assert redact_argv(argv) == [
        "run.py",
        "--hub_token",
        REDACTED,
        "--output_dir",
        "out",
        f"--hub_token={REDACTED}",
        "--max_per_token",
        "4",
    ]
    assert redact_argv(argv, drop=True) == ["run.py", "--output_dir", "out", "--max_per_token", "4"]
    assert (
        redact_text("bioptimus pretrain --hub_token T0KEN123 --x 1")
        == f"bioptimus pretrain --hub_token {REDACTED} --x 1"
    )
    assert redact_text("hub_token: T0KEN123\nsteps: 2") == f"hub_token: {REDACTED}\nsteps: 2"
    assert redact_text('{"hub_token": "T0KEN123", "n": 1}') == f'{{"hub_token": "{REDACTED}", "n": 1}}'
    assert redact_text("Config(hub_token='T0KEN123', lr=1)") == f"Config(hub_token='{REDACTED}', lr=1)"
    assert redact_text("tokenizer_name: bert; mask_token: [MASK]") == "tokenizer_name: bert; mask_token: [MASK]"


def test_the_token_environment_variables_and_remembered_tokens_are_redacted_wherever_they_appear(monkeypatch):
    monkeypatch.setattr(secrets, "_remembered", set())
    monkeypatch.setenv("HF_TOKEN", "hf_fromTheEnvironment1")
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_legacyVariable22")
    text = "a URL https://x/?t=hf_fromTheEnvironment1 and hf_legacyVariable22 and hf_given333"
    assert redact_text(text) == f"a URL https://x/?t={REDACTED} and {REDACTED} and hf_given333"
    secrets.remember_secret("hf_given333")
    assert redact({"note": ["hf_given333"]}) == {"note": [REDACTED]}
    assert secrets.holds_secret(b"..hf_given333..") and not secrets.holds_secret(b"nothing")


@pytest.mark.parametrize("push", [False, True])
def test_take_hub_settings_clears_the_token_whether_or_not_the_run_pushes(tmp_path, push, monkeypatch):
    monkeypatch.setattr(secrets, "_remembered", set())
    args = TrainingArguments(
        output_dir=str(tmp_path / "x"), hub_token="hf_tok_in_args", push_to_hub=push, report_to="none"
    )
    settings = take_hub_settings(args, what="a model")
    assert args.hub_token is None and args.push_to_hub is False
    assert (settings.token if push else settings) == ("hf_tok_in_args" if push else None)
    assert b"hf_tok_in_args" not in pickle.dumps(args)  # what the Trainer saves as training_args.bin
    assert redact_text("hf_tok_in_args") == REDACTED  # remembered: redacted from any later text


# ------------------------------------------------------------------------------- every command, each way
@pytest.fixture
def hub(monkeypatch, tmp_path):
    from bioptimus_hf.testing.fake_hub import FakeHub

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(secrets, "_remembered", set())  # nothing redacted because an earlier test remembered it
    with FakeHub(token=SENTINEL, lifetime_s=600) as fake:
        monkeypatch.setattr(hf_constants, "ENDPOINT", fake.url)
        yield fake


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_model_dir):
    """A corpus, a tiny BERT with its tokenizer, NER and BLURB data, a finished run's releases (never scanned)."""
    from bioptimus_hf.testing.tiny_releases import make_run

    root = tmp_path_factory.mktemp("inputs")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(200)) + "\n")
    return {
        "root": root,
        "corpus": corpus,
        "mlm": tiny_model_dir,
        "bert": build_tiny_bert(str(root / "bert")),
        "ner": write_dataset_dir(str(root / "ner"), sizes=(16, 8, 8), types=("Disease",)),
        "blurb": write_task_dir(root / "gad", "relation_extraction"),
        "run": make_run(root / "run", n_versions=1),
    }


def _given(way: str, argv: list, tmp_path: Path, monkeypatch) -> list[str]:
    """``argv`` with the token given ``way``: a flag, the environment, or a config file (outside the outputs)."""
    argv = [str(a) for a in argv]
    if way == "flag":
        return argv + ["--hub_token", SENTINEL]
    if way == "env":
        monkeypatch.setenv("HF_TOKEN", SENTINEL)
        return argv
    config = tmp_path / "token_config.yaml"
    config.write_text(yaml.safe_dump({"hub_token": SENTINEL}))
    return [str(config), *argv]


def _pretrain(inputs, out):
    return partial(bioptimus, "pretrain"), [
        *mapping_to_argv(
            {
                "model_name_or_path": inputs["bert"],
                "tokenizer_name": inputs["mlm"],  # another vocabulary: new tokens, initialised, init_report.json
                "init_strategy": "averaged",
                "train_file": inputs["corpus"],
                "output_dir": out,
                "do_train": True,
                "single_phase": "0.4",
                "max_steps": 2,
                "per_device_train_batch_size": 4,
                "max_seq_length": 32,
                "validation_split_percentage": 0,
                "report_to": "none",
                "disable_tqdm": True,
                "save_steps": 1,
                "push_to_hub": True,
                "hub_model_id": "acme/secret-pretrain",
            }
        )
    ]


def _distill(inputs, out):
    flags = {
        "teacher_model_name_or_path": inputs["mlm"],
        "student_layers": 0,
        "train_file": inputs["corpus"],
        "output_dir": out,
        "max_steps": 1,
        "per_device_train_batch_size": 4,
        "max_seq_length": 32,
        "report_to": "none",
        "disable_tqdm": True,
        "speed_batches": 0,
        "save_steps": 1,
        "push_to_hub": True,
        "hub_model_id": "acme/secret-student",
    }
    return partial(bioptimus, "distill"), mapping_to_argv(flags)


def _ner(inputs, out):
    flags = quick_ner_flags(seeds=[1], max_steps=2, model_name="tiny-bert")
    argv = ["--model_name_or_path", inputs["bert"], "--data_dir", inputs["ner"], "--output_dir", out, *flags]
    return partial(bioptimus, "ner"), argv + ["--push_to_hub", "--hub_model_id", "acme/secret-ner"]


def _blurb_task(inputs, out):
    flags = {
        "model_name_or_path": inputs["bert"],
        "data_dir": inputs["blurb"],
        "output_dir": out,
        "seeds": [1],
        "max_steps": 1,
        "per_device_train_batch_size": 4,
        "per_device_eval_batch_size": 4,
        "report_to": "none",
        "disable_tqdm": True,
        "use_cpu": True,
        "push_to_hub": True,
        "hub_model_id": "acme/secret-blurb",
    }
    return partial(bioptimus, "blurb-task"), mapping_to_argv(flags)


def _publish(inputs, out):
    argv = ["--run_dir", inputs["run"], "--hub_model_id", "acme/secret-publish", "--staging_dir", out / "staging"]
    return partial(bioptimus, "publish"), argv


COMMANDS = {
    "pretrain": (_pretrain, "acme/secret-pretrain"),
    "distill": (_distill, "acme/secret-student"),
    "ner": (_ner, "acme/secret-ner"),
    "blurb-task": (_blurb_task, "acme/secret-blurb"),
    "publish": (_publish, "acme/secret-publish"),
}


def _leaks(root: Path, hub, capfd, caplog) -> list[str]:
    """Where the sentinel is: files under ``root`` (any bytes, pickles included), upload bodies, output, logs."""
    needle = SENTINEL.encode()
    found = [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
    found += [f"upload body {i}" for i, body in enumerate(hub.bodies) if needle in body]
    captured = capfd.readouterr()
    found += [name for name, text in (("stdout", captured.out), ("stderr", captured.err)) if SENTINEL in text]
    found += ["log"] if SENTINEL in caplog.text else []
    return found


# Every way for every command that pushes; a token given to a run that does not push (the Trainer's own
# training_args.bin and the init report then held it) for each command that trains.
CASES = [(command, way, True) for command in COMMANDS for way in WAYS] + [
    (command, way, False) for command in ("pretrain", "distill", "ner", "blurb-task") for way in ("flag", "config")
]


@pytest.mark.parametrize("command, way, push", CASES)
def test_no_command_writes_prints_or_uploads_the_token(
    command, way, push, inputs, hub, tmp_path, monkeypatch, capfd, caplog
):
    caplog.set_level(logging.INFO)
    build, repo_id = COMMANDS[command]
    out = tmp_path / "out"
    main, argv = build(inputs, out)
    if not push:
        argv = argv[: argv.index("--push_to_hub")]  # the Hub flags come last
    main(_given(way, argv, tmp_path, monkeypatch))
    if push:  # it did push, with the token given this way, and never through the Trainer ("Model save")
        assert repo_id in hub.repos and hub.bodies
        assert not any(message.startswith("Model save") for _, _, message in hub.commit_messages)
    if push and command == "blurb-task":  # the seed's folder, its card included, without the predictions
        files = hub.files(repo_id, "main")
        assert {"README.md", "config.json", "model.safetensors"} <= set(files) and "seed_results.json" in files
        assert not any("predictions" in path or path.startswith("checkpoint-") for path in files)
    if not push:
        assert hub.requests == []
    assert all(status != 401 for _, _, status in hub.requests)
    assert _leaks(out, hub, capfd, caplog) == []
    if command != "publish":
        assert list(out.rglob("training_args.bin"))  # the pickles searched: each checkpoint's and seed's
    if command == "pretrain":
        assert (out / "init_report.json").is_file()  # the initialisation's settings searched too


def test_a_study_with_a_token_in_its_pretraining_and_ner_settings_records_none(
    inputs, hub, tmp_path, monkeypatch, capfd, caplog
):
    caplog.set_level(logging.INFO)
    monkeypatch.setenv("HF_TOKEN", SENTINEL)  # and the environment's, at once
    out = tmp_path / "out"
    config = {
        "model_name_or_path": str(inputs["mlm"]),
        "output_dir": str(out / "study"),
        "token_budget": 256,  # 2 steps of 4 x 32 tokens
        "pretraining_args": {
            "train_file": [str(inputs["corpus"])],
            "max_seq_length": 32,
            "per_device_train_batch_size": 4,
            "validation_split_percentage": 0,
            "save_steps": 1,
            "report_to": "none",
            "disable_tqdm": True,
            "hub_token": SENTINEL,
        },
        "arms": [{"name": "continued", "init_strategy": "continued", "single_phase": "0.4"}],
        "ner_data_dirs": [inputs["ner"]],
        "ner_seeds": [1],
        "ner_args": {"max_steps": 1, "max_seq_length": 16, "window_stride": 4, "use_cpu": True, "hub_token": SENTINEL},
        "skip_analysis": True,
    }
    path = tmp_path / "study.yaml"  # the user's own file, outside the outputs
    path.write_text(yaml.safe_dump(config))
    bioptimus("study", [str(path)])
    assert (out / "study" / "study" / "results.json").is_file() and list(out.rglob("pretraining_args.json"))
    assert REDACTED in (out / "study" / "study" / "results.json").read_text()
    assert _leaks(out, hub, capfd, caplog) == []


def test_init_embeddings_with_the_token_in_the_environment(inputs, hub, tmp_path, monkeypatch, capfd, caplog):
    caplog.set_level(logging.INFO)
    monkeypatch.setenv("HF_TOKEN", SENTINEL)
    out = tmp_path / "out"
    bioptimus(
        "init-embeddings",
        [
            "--model_name_or_path",
            inputs["bert"],
            "--tokenizer_name",
            str(inputs["mlm"]),
            "--init_strategy",
            "averaged",
            "--output_dir",
            str(out),
            "--init_device",
            "cpu",
        ],
    )
    assert (out / "init_report.json").is_file() and _leaks(out, hub, capfd, caplog) == []


def test_the_blurb_benchmark_with_the_token_in_its_ner_config_and_the_environment(
    inputs, hub, tmp_path, monkeypatch, capfd, caplog
):
    caplog.set_level(logging.INFO)
    monkeypatch.setenv("HF_TOKEN", SENTINEL)
    ner_config = tmp_path / "ner.yaml"  # the user's own file, outside the outputs
    ner_config.write_text(yaml.safe_dump({"max_seq_length": 16, "window_stride": 4, "hub_token": SENTINEL}))
    blurb_dir, ner_dir = tmp_path / "blurb", tmp_path / "ner"
    write_task_dir(blurb_dir / "GAD", "relation_extraction")
    write_dataset_dir(str(ner_dir / "NCBI-disease-IOB"), sizes=(8, 4, 4))
    out = tmp_path / "out"
    flags = {
        "model_name_or_path": inputs["bert"],
        "seeds": [1],
        "blurb_dir": blurb_dir,
        "ner_dir": ner_dir,
        "ner_config": ner_config,
        "output_dir": out,
        "max_steps": 1,
        "jobs": 1,
    }
    bioptimus("blurb", mapping_to_argv(flags))
    assert list(out.rglob("blurb_results.json")) and list(out.rglob("seed_results.json"))
    assert _leaks(out, hub, capfd, caplog) == []


# ------------------------------------------------------------------------------- what a lock and an error say
def test_the_lock_of_a_busy_output_directory_names_the_command_without_its_token(tmp_path, monkeypatch):
    import sys

    from bioptimus_hf.pretraining.run_lifecycle import OutputDirBusyError, OutputDirLock

    command = ["/usr/bin/python3", "/x/run_pretraining.py", "--hub_token", SENTINEL, f"--hub_token={SENTINEL}"]
    monkeypatch.setattr(sys, "orig_argv", command)
    with OutputDirLock(tmp_path):
        content = (tmp_path / ".bioptimus-run.lock").read_text()
        assert SENTINEL not in content and f"(python3 /x/run_pretraining.py --hub_token {REDACTED}" in content
        with pytest.raises(OutputDirBusyError) as busy:
            OutputDirLock(tmp_path).acquire()
    assert SENTINEL not in str(busy.value) and "is in use by process" in str(busy.value)


def test_publish_to_an_unreachable_hub_ends_with_one_line_without_the_token(inputs, tmp_path, capfd):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    argv = ["--run_dir", str(inputs["run"]), "--hub_model_id", "acme/x", "--endpoint", f"http://127.0.0.1:{closed}"]
    with pytest.raises(SystemExit) as ended:
        bioptimus("publish", [*argv, "--hub_token", SENTINEL])
    message = str(ended.value)
    assert message.startswith("error: the Hub request failed: ") and "Traceback" not in message
    assert SENTINEL not in message and "--hub_token" not in message
    assert f"bioptimus publish {' '.join(argv)}" in message  # the command that resumes, runnable as written
    assert SENTINEL not in "".join(capfd.readouterr())


def test_a_ner_push_the_hub_refuses_ends_with_one_line_after_the_results(inputs, hub, tmp_path, capfd):
    hub.token = "hf_another_token_entirely"  # the Hub answers 401 to ours
    out = tmp_path / "out"
    main, argv = _ner(inputs, out)
    with pytest.raises(SystemExit) as ended:
        main([*map(str, argv), "--hub_token", SENTINEL])
    message = str(ended.value)
    assert message.startswith("error: --push_to_hub to acme/secret-ner failed: ") and "401" in message
    assert SENTINEL not in message and (out / "all_results.json").is_file()
    assert SENTINEL not in "".join(capfd.readouterr())
