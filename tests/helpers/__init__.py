"""Plain functions the tests share (fixtures and hooks live in tests/conftest.py): the shared corpus, a script's
``main()`` run as from its command line, a command line from a mapping, and subprocesses started by a test. Topic
helpers sit beside this module: ``helpers.ner``, ``helpers.families``, ``helpers.qikfind``, ``helpers.embedding_init``,
``helpers.masked_lm``, ``helpers.blurb``, ``helpers.pretraining``, ``helpers.pubmed``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data"
CORPUS = DATA_DIR / "corpus" / "pubmed_sentences.txt"


def corpus_lines(n: int, start: int = 0) -> list[str]:
    lines = []
    with open(CORPUS, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i >= start + n:
                break
            if i >= start:
                lines.append(line.rstrip("\n"))
    return lines


def write_corpus(path: Path, lines: int = 600, start: int = 0, bad_byte: bool = False) -> Path:
    """``lines`` corpus lines from line ``start``, one a line, UTF-8; ``bad_byte`` appends a line holding a byte
    that is not UTF-8 (the readers replace it and count it)."""
    text = ("\n".join(corpus_lines(lines, start)) + "\n").encode("utf-8")
    Path(path).write_bytes(text + b"a line with a bad \xff byte\n" if bad_byte else text)
    return Path(path)


def run_script(monkeypatch, script, argv) -> None:
    """Run a ``run_*.py`` script's ``main()`` as its command line would: ``sys.argv`` is the script's name (the
    parser's program name in messages) and ``argv``, each as a string."""
    monkeypatch.setattr(sys, "argv", [Path(script.__file__).name, *map(str, argv)])
    script.main()


def flags(mapping) -> list[str]:
    """A command line setting ``mapping``'s values (a None value leaves its flag out), each value as a config file's
    line would spell it: ``{"seeds": [1, 2], "do_train": True}`` is ``--seeds 1 2 --do_train true``."""
    argv: list[str] = []
    for key, value in mapping.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if value is not None:
            argv += [f"--{key}", *(json.dumps(v) if isinstance(v, (bool, dict, list)) else str(v) for v in values)]
    return argv


def run_launcher(command, env, timeout, cwd=None) -> subprocess.CompletedProcess:
    """Run a launcher command (``python -m torch.distributed.run ...``) and capture its output.

    ``subprocess.run(timeout=...)`` SIGKILLs the launcher alone; torchrun starts each worker in its own
    session, so a hung worker outlived the test and slowed the rest of the suite. On timeout this sends
    SIGTERM, which torchrun forwards to its workers, then fails the test with the launcher's stderr.
    """
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            stdout, stderr = process.communicate(timeout=60)  # torchrun gives its workers 30 s after SIGTERM
        except subprocess.TimeoutExpired:
            process.kill()  # orphans the workers, which keep the pipes open: do not read them
            process.wait()
            stderr = "(not read: the launcher ignored SIGTERM)"
        pytest.fail(
            f"the launcher did not finish within {timeout} s and was stopped with its workers; "
            f"its stderr ends:\n{stderr[-3000:]}"
        )
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def python_path(*directories) -> str:
    """PYTHONPATH for a test's subprocess: ``directories`` first, then the caller's own PYTHONPATH (where an
    environment puts packages, e.g. a GPU image's carried site-packages), never replacing it."""
    inherited = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return os.pathsep.join([str(d) for d in directories] + inherited)
