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


def test_a_command_started_with_ctrl_c_ignored_or_blocked_obeys_it(restored_signals):
    from bioptimus_hf.utils.cli import obey_interrupts

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a non-interactive shell starts `cmd &`
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        obey_interrupts()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert not {signal.SIGINT, signal.SIGTERM} & signal.pthread_sigmask(signal.SIG_BLOCK, set())
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


IMPORT_INTERRUPTED = """
import builtins, os, signal
real_import = builtins.__import__

def interrupting_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 1 and name == "table":  # bioptimus_hf.commands importing its command table
        os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, globals, locals, fromlist, level)

builtins.__import__ = interrupting_import
from bioptimus_hf.commands import main
"""


def test_a_ctrl_c_while_the_command_module_imports_is_one_line(tmp_path):
    """The moment before ``main`` can run: Ctrl-C while ``bioptimus_hf.commands`` imports its table."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_INTERRUPTED], capture_output=True, text=True, env=_environment()
    )
    assert (result.returncode, result.stderr) == (INTERRUPTED_STATUS, "interrupted\n")


WORKER_MASKS = """
import multiprocessing, signal
from multiprocessing import util
from bioptimus_hf.corpus import tasks

masks, spawn = [], util.spawnv_passfds

def recording_spawn(path, args, passfds):
    masks.append(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    return spawn(path, args, passfds)

util.spawnv_passfds = recording_spawn
workers = tasks._start(multiprocessing.get_context("spawn"), 2)
tasks._stop(workers, at_once=False)
print(masks[-2:], signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))
"""


def test_prepare_corpus_workers_start_with_ctrl_c_blocked_even_the_first():
    """multiprocessing starts its resource tracker with the first worker, and unblocks SIGINT as it does: a worker
    started after that would see a Ctrl-C while its interpreter starts (a traceback from its ``site`` import)."""
    result = subprocess.run([sys.executable, "-c", WORKER_MASKS], capture_output=True, text=True, env=_environment())
    assert result.stdout.split("\n")[-2] == "[True, True] False", result.stderr


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


def interrupt(command, tmp_path, ready, env=None, within=GONE_WITHIN_SECONDS):
    """Start ``command`` in its own session, wait until ``ready(stdout, stderr)``, send SIGINT to its group, and
    return (exit status, stdout, stderr) once the group is gone; fail if it outlives ``within`` seconds."""
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
        while _group_alive(process) and time.monotonic() - sent < within:
            time.sleep(0.05)
        alive = _group_alive(process)
    finally:
        if _group_alive(process):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not alive, f"the process group outlived Ctrl-C by {within} s:\n{err.read_text()[-3000:]}"
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


# ------------------------------------------------------------------------------------------ a busy machine
LOADED_WITHIN_SECONDS = 10  # the bound on a machine loaded at twice its cores


@pytest.fixture
def busy_machine():
    """Twice as many busy processes as this process may use cores, as on a shared workstation or a CI runner: the
    seconds a command spends importing torch or starting workers last several times longer."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * len(os.sched_getaffinity(0)))
    ]
    yield
    for hog in hogs:
        hog.kill()
        hog.wait()


def _after(seconds: float):
    """Ready ``seconds`` after the first look (made as the command starts)."""
    started = []

    def ready(stdout: str, stderr: str) -> bool:
        started.append(time.monotonic())
        return started[-1] - started[0] >= seconds

    return ready


def _started(how: str, command: list) -> list:
    """``command`` as a terminal starts it (its own process group), or put in the background of a script (``cmd &``
    in a non-interactive shell, which starts it with SIGINT ignored; the shell waits and exits with its status)."""
    if how == "terminal":
        return command
    return ["bash", "-c", 'trap "" INT; "$@" & wait $!', "bash", *map(str, command)]


@pytest.fixture(scope="module")
def pubmed_files(tmp_path_factory):
    """Three PubMed files of 4,000 citations each: a run that takes seconds on a quiet machine."""
    from bioptimus_hf.testing.pubmed_files import Record, write_pubmed_file

    directory = tmp_path_factory.mktemp("pubmed")
    words = [f"w{i}" for i in range(500)]
    text = lambda n, at: " ".join(words[(at * 7 + i * 13) % 500] for i in range(n)) + "."  # noqa: E731
    for number in range(3):
        first = number * 4000 + 1
        records = [Record(first + i, text(12, i), [(None, None, text(200, i + 1))]) for i in range(4000)]
        write_pubmed_file(directory / f"pubmed25n{number + 1:04d}.xml.gz", records)
    return sorted(directory.glob("*.xml.gz"))


# Started by a terminal, a Ctrl-C from 0.2 s on; from a script's background, from 1 s on: before the interpreter
# runs the command's first line (a tenth of a second), a signal the shell set ignored is dropped by the kernel.
MOMENTS = [("terminal", 0.2), ("terminal", 1.0), ("terminal", 3.0), ("script", 1.0), ("script", 3.0)]


@pytest.mark.parametrize("how, seconds", MOMENTS, ids=[f"{how} {seconds} s" for how, seconds in MOMENTS])
def test_ctrl_c_on_a_busy_machine_ends_pretrain_and_leaves_nothing_finished(
    how, seconds, tmp_path, tiny_model_dir, make_corpus, busy_machine
):
    out = tmp_path / "out"
    command = [BIOPTIMUS, "pretrain", "--model_name_or_path", tiny_model_dir, "--train_file", make_corpus()]
    command += ["--output_dir", out, "--max_steps", "100000", "--report_to", "none", "--save_steps", "100000"]
    status, _, stderr = interrupt(_started(how, command), tmp_path, _after(seconds), within=LOADED_WITHIN_SECONDS)
    assert_one_line(status, stderr)
    left = {path.name for path in out.rglob("*")} if out.exists() else set()
    assert not left & {"releases", "all_results.json", "train_results.json", "model.safetensors"}, left
    assert not any(name.startswith("checkpoint-") for name in left), left


@pytest.mark.parametrize("how, seconds", MOMENTS, ids=[f"{how} {seconds} s" for how, seconds in MOMENTS])
def test_ctrl_c_on_a_busy_machine_ends_prepare_corpus_and_leaves_nothing_finished(
    how, seconds, tmp_path, pubmed_files, busy_machine
):
    from bioptimus_hf.utils.prepared_corpus import MANIFEST_NAME

    out = tmp_path / "out"
    command = [BIOPTIMUS, "prepare-corpus", "--input_files", *pubmed_files, "--output_dir", out]
    command += ["--num_workers", "2", "--disable_tqdm", "true"]
    status, _, stderr = interrupt(_started(how, command), tmp_path, _after(seconds), within=LOADED_WITHIN_SECONDS)
    assert_one_line(status, stderr)
    assert not (out / MANIFEST_NAME).exists()
