"""Ctrl-C ends every command in one line: ``interrupted``, exit status 130, no traceback, its whole process group
(workers included) gone within 5 seconds, nothing written that looks finished.

Each command runs in its own session; SIGINT goes to the group, as a terminal's Ctrl-C does. The points: while the
command still imports (``python -X importtime``'s lines say how far it got), while a tiny model trains, and while
``bioptimus blurb --jobs 2``'s workers fine-tune. The in-process tests pin ``bioptimus``'s part: the one line and
the status for every way a command is started, SIGTERM as ``terminated`` and 143."""

import gc
import os
import re
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bioptimus_hf import commands
from bioptimus_hf.utils.cli import INTERRUPTED_STATUS, TERMINATED_STATUS, exit_on_interrupt


ROOT = Path(__file__).resolve().parents[1]
BIOPTIMUS = Path(sys.executable).with_name("bioptimus")
GONE_WITHIN_SECONDS = 5  # the bound the docs promise: a bound on termination, not a speed
READY_WITHIN_SECONDS = 600  # how long a command may take to reach the point it is interrupted at (a loaded machine)


@pytest.fixture
def restored_signals():
    """``bioptimus`` ignores both signals once interrupted and freezes the heap (the process ends); this process
    goes on."""
    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)
    gc.unfreeze()


# ------------------------------------------------------------------------------------------ in process
@pytest.mark.parametrize("how", ["bioptimus ner", "run_ner.py", "python -m bioptimus_hf.commands ner"])
def test_a_keyboard_interrupt_is_one_line_and_status_130_however_the_command_is_started(
    how, monkeypatch, capsys, restored_signals
):
    def interrupted(name, argv=None, prog=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "run", interrupted)
    if how == "bioptimus ner":
        call = lambda: commands.main(["ner", "--seeds", "1"])  # noqa: E731
    elif how == "run_ner.py":
        monkeypatch.setattr(sys, "argv", [str(ROOT / "run_ner.py"), "--seeds", "1"])
        call = lambda: runpy.run_path(str(ROOT / "run_ner.py"), run_name="__main__")  # noqa: E731
    else:
        monkeypatch.setattr(sys, "argv", ["-m", "ner", "--seeds", "1"])
        call = lambda: runpy.run_module("bioptimus_hf.commands", run_name="__main__")  # noqa: E731
    with pytest.raises(SystemExit) as ended:
        call()
    assert ended.value.code == INTERRUPTED_STATUS == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second Ctrl-C cannot break the clean-up


def test_sigterm_is_one_line_and_status_143_and_the_handler_is_given_back(capsys, restored_signals):
    with pytest.raises(SystemExit) as ended, exit_on_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
    assert ended.value.code == TERMINATED_STATUS == 143
    assert capsys.readouterr().err == "terminated\n"
    with exit_on_interrupt():
        pass
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_IGN, signal.SIG_DFL)


def test_a_finished_command_leaves_sigterm_as_it_was(restored_signals):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with exit_on_interrupt():
        pass
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    own = lambda signum, frame: None  # noqa: E731  (a launcher's own handler is left alone)
    signal.signal(signal.SIGTERM, own)
    with exit_on_interrupt():
        assert signal.getsignal(signal.SIGTERM) is own
    assert signal.getsignal(signal.SIGTERM) is own


# ------------------------------------------------------------------------------------------ a process group
def _environment(**extra) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), **extra}
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        env[name] = "1"
    env["TOKENIZERS_PARALLELISM"] = "false"
    return env


def _group_alive(process: subprocess.Popen) -> bool:
    process.poll()  # reaps the leader once it has ended (a zombie still counts as alive)
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def interrupt(command, tmp_path, ready, env=None):
    """Start ``command`` in its own session, wait until ``ready(stdout, stderr)``, send SIGINT to its group, and
    return (exit status, stdout, stderr) once the group is gone; fail if it outlives :data:`GONE_WITHIN_SECONDS`."""
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(
            list(map(str, command)),
            cwd=tmp_path,
            env=env or _environment(),
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + READY_WITHIN_SECONDS
        while not ready(out.read_text(errors="replace"), err.read_text(errors="replace")):
            assert process.poll() is None, f"ended before the point to interrupt:\n{err.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"never reached the point to interrupt:\n{err.read_text()[-3000:]}"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        sent = time.monotonic()
        while _group_alive(process) and time.monotonic() - sent < GONE_WITHIN_SECONDS:
            time.sleep(0.05)
        alive = _group_alive(process)
    finally:
        if _group_alive(process):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not alive, f"the process group outlived Ctrl-C by {GONE_WITHIN_SECONDS} s:\n{err.read_text()[-3000:]}"
    return process.returncode, out.read_text(errors="replace"), err.read_text(errors="replace")


def assert_one_line(status: int, stderr: str) -> None:
    """Exit status 130; the last of stderr one line, ``interrupted``; no traceback anywhere (import-time lines of
    ``-X importtime`` aside)."""
    lines = [line for line in stderr.splitlines() if not line.startswith("import time:") and line.strip()]
    assert status == INTERRUPTED_STATUS, stderr[-3000:]
    assert lines and lines[-1] == "interrupted", stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]


def _importing_torch(stdout: str, stderr: str) -> bool:
    """``bioptimus`` is loaded and the command is importing torch (numpy comes first)."""
    return "bioptimus_hf.commands.table" in stderr and re.search(r"\|\s+numpy$", stderr, re.MULTILINE) is not None


@pytest.mark.parametrize(
    "command",
    [
        [BIOPTIMUS, "pretrain", "--help"],
        [sys.executable, "-X", "importtime", ROOT / "run_pretraining.py", "--help"],
        [sys.executable, "-X", "importtime", "-m", "bioptimus_hf.commands", "blurb", "--help"],
    ],
    ids=["console script", "run_pretraining.py", "python -m"],
)
def test_ctrl_c_while_a_command_imports_is_one_line(command, tmp_path):
    env = _environment(PYTHONPROFILEIMPORTTIME="1")
    status, _, stderr = interrupt(command, tmp_path, _importing_torch, env)
    assert_one_line(status, stderr)


@pytest.mark.parametrize(
    "launcher",
    [[BIOPTIMUS, "pretrain"], [sys.executable, ROOT / "run_pretraining.py"]],
    ids=["bioptimus pretrain", "run_pretraining.py"],
)
def test_ctrl_c_while_a_tiny_model_trains_is_one_line_and_writes_no_release(
    launcher, tmp_path, tiny_model_dir, make_corpus
):
    """Pre-training with two DataLoader workers, interrupted once its first steps are logged: the group (workers
    included) is gone, and nothing of a finished run is there: no release, no final model or metrics; the same
    through the command's script."""
    corpus, out = make_corpus(), tmp_path / "out"
    command = [*launcher, "--model_name_or_path", tiny_model_dir, "--train_file", corpus]
    command += ["--output_dir", out, "--max_steps", "100000", "--logging_steps", "1", "--report_to", "none"]
    command += ["--dataloader_num_workers", "2", "--save_steps", "100000"]
    status, stdout, stderr = interrupt(command, tmp_path, lambda stdout, stderr: "'loss'" in stdout)
    assert_one_line(status, stderr)
    assert not (out / "releases").exists()
    finished = {"all_results.json", "train_results.json", "model.safetensors", "trainer_state.json"}
    assert not finished & {path.name for path in out.iterdir()}


def _workers_start(out: Path):
    return lambda stdout, stderr: (out / "logs").is_dir()  # made just before the pool starts its workers


def _workers_fine_tune(out: Path):
    def ready(stdout: str, stderr: str) -> bool:  # each worker has written to its job's log
        logs = list((out / "logs").glob("*.log")) if (out / "logs").is_dir() else []
        return len(logs) == 2 and all(log.stat().st_size > 0 for log in logs)

    return ready


@pytest.mark.parametrize("point", [_workers_start, _workers_fine_tune], ids=["workers start", "workers fine-tune"])
def test_ctrl_c_while_blurb_runs_jobs_in_workers_is_one_line_and_writes_no_table(point, tmp_path):
    """``bioptimus blurb --jobs 2``, interrupted as its workers start and while both fine-tune: the workers are
    gone with the command, and no seed, dataset or table result is written."""
    from helpers.blurb import write_task_dir
    from helpers.ner import build_tiny_bert

    model = build_tiny_bert(str(tmp_path / "model"))
    write_task_dir(tmp_path / "blurb" / "GAD", "relation_extraction")
    write_task_dir(tmp_path / "blurb" / "BIOSSES", "sentence_similarity")
    out = tmp_path / "out"
    command = [BIOPTIMUS, "blurb", "--model_name_or_path", model, "--blurb_dir", tmp_path / "blurb", "--seeds", "1"]
    command += ["--output_dir", out, "--max_steps", "100000", "--jobs", "2"]
    status, _, stderr = interrupt(command, tmp_path, point(out), _environment(OMP_NUM_THREADS="1"))
    assert_one_line(status, stderr)
    written = {path.name for path in out.rglob("*")}
    assert not written & {"blurb_results.json", "blurb_results.md", "all_results.json", "seed_results.json"}
