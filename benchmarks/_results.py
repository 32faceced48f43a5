"""The one writer of benchmark results: ``benchmarks/results/<machine kind>/<name>.json``.

Every result file is one record (``RECORD_KEYS``)::

    {"machine": {...},       # benchmarks/_machine.describe_machine(), with its "kind" and "fingerprint"
     "commit": "<sha>",      # the checkout the benchmark ran from
     "date": "YYYY-MM-DD",   # UTC
     "command": "python benchmarks/<script>.py ...",   # what reproduces the figures
     "figures": {...},       # the headline numbers (what docs quote and benchmarks/README.md tabulates)
     "detail": {...}}        # the raw measurements (runs, settings), optional

A benchmark that fills one file in several invocations (``--section``) keeps ``figures`` and ``detail`` keyed by
section and adds ``"sections": {name: {"commit", "date", "command"}}``; the top-level ``commit``/``date``/``command``
are the latest write's.

Guarantees: a file holding another machine kind's results is never overwritten (:class:`ResultsConflictError`, a
one-line exit naming the file); runs recorded with another machine's fingerprint are never filed with this one's;
local paths (``/tmp/...``, ``/work/...``, ``/root/...``, ``/home/...``) are written as their last component (a path
inside this repository as its repository-relative path); the file is replaced atomically.

The recorded ``command`` runs as written from the repository root (:func:`public_command`): a path inside the
repository is repository-relative, the shared data ``../shared/...``, an installed package's files
``$(python -c "import pkg, os; print(os.path.dirname(pkg.__file__))")/...``, and a scratch folder (``/tmp/x``,
a home or work folder) ``$SCRATCH/x``: set ``SCRATCH`` to any folder of yours before running it.
"""

from __future__ import annotations

import datetime
import shlex
import sys
from pathlib import Path

import _machine
from bioptimus_hf.utils import public_paths
from bioptimus_hf.utils.files import read_json, write_json_atomic
from bioptimus_hf.utils.secrets import redact


ROOT = _machine.ROOT
RESULTS_DIR = ROOT / "benchmarks" / "results"
RECORD_KEYS = ("machine", "commit", "date", "command", "figures")
# How a record names local paths (runnable as written, no one's file system): the library's one rule, for this checkout.
LOCAL_PATH, SCRATCH = public_paths.local_path_pattern(ROOT), public_paths.SCRATCH


class ResultsConflictError(SystemExit):
    """A write would mix machine kinds; exits with its one-line message when not caught."""

    def __init__(self, message: str):
        super().__init__(f"error: {message}")
        self.message = message


def public_path(path: str) -> str:
    """:func:`bioptimus_hf.utils.public_paths.public_path` for this checkout."""
    return public_paths.public_path(path, ROOT)


def command_path(path: str) -> str:
    """:func:`bioptimus_hf.utils.public_paths.command_path` for this checkout."""
    return public_paths.command_path(path, ROOT)


def public_command(command: str) -> str:
    """``command`` with every local path made runnable as written (:func:`command_path`)."""
    return public_paths.public_command(command, ROOT)


def public_value(value):
    """``value`` (JSON-like) with every local path in its strings replaced by :func:`public_path`."""
    return public_paths.public_value(value, ROOT)


def reproduce_command(argv: list[str] | None = None) -> str:
    """The command line that ran this benchmark (``python benchmarks/<script>.py ...``), runnable as written from the
    repository root (:func:`public_command`)."""
    argv = list(sys.argv if argv is None else argv)
    script = public_path(str(Path(argv[0]).resolve())) if argv else "?"
    return public_command(shlex.join(["python", script, *argv[1:]]))


def result_path(name: str, machine: dict) -> Path:
    """Where ``name``'s results for this machine live: ``benchmarks/results/<kind>/<name>.json``."""
    return RESULTS_DIR / _machine.machine_kind(machine) / f"{name}.json"


def output_path(name_or_path: str | Path, machine: dict) -> Path:
    """A ``.json`` path as given (a benchmark's ``--output``), else :func:`result_path` of the name."""
    text = str(name_or_path)
    return Path(text) if text.endswith(".json") else result_path(text, machine)


def output_help(name: str) -> str:
    """The ``--output`` help of a benchmark whose results are called ``name``."""
    return f"results file (default benchmarks/results/<machine kind>/{name}.json)"


def check_writable(path: str | Path, machine: dict) -> None:
    """Refuse, before any work, a file that holds another machine kind's results."""
    path = Path(path)
    if not path.exists():
        return
    existing = read_json(path)
    existing_machine = existing.get("machine") if isinstance(existing, dict) else None
    if not isinstance(existing_machine, dict):
        raise ResultsConflictError(f'{path} is not a results record (no "machine"); write another --output')
    kind, existing_kind = _machine.machine_kind(machine), _machine.machine_kind(existing_machine)
    if kind != existing_kind:
        raise ResultsConflictError(
            f"{path} holds results of a {existing_kind} machine and this is {kind}: write "
            f"benchmarks/results/{kind}/{path.name} (the default) or another --output"
        )


def _run_fingerprints(detail) -> set[str]:
    runs = detail.get("runs") if isinstance(detail, dict) else None
    runs = runs.values() if isinstance(runs, dict) else runs or []
    return {run["machine_fingerprint"] for run in runs if isinstance(run, dict) and run.get("machine_fingerprint")}


def build_record(
    figures: dict,
    *,
    machine: dict,
    command: str,
    detail: dict | None = None,
    date: str | None = None,
    commit: str | None = None,
) -> dict:
    """One result record (the module docstring's schema), local paths made public."""
    machine = dict(machine, kind=_machine.machine_kind(machine))
    record = {
        "machine": machine,
        "commit": commit if commit is not None else (machine.get("git") or {}).get("commit"),
        "date": date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "command": public_command(command),
        "figures": figures,
    }
    if detail is not None:
        record["detail"] = detail
    return public_value(record)


def write_result(
    name_or_path: str | Path,
    figures: dict,
    *,
    detail: dict | None = None,
    machine: dict | None = None,
    command: str | None = None,
    section: str | None = None,
) -> Path:
    """Write one benchmark's record (or one ``section`` of it) for this machine; returns the file written.

    Raises :class:`ResultsConflictError` when the file holds another machine kind's results or when ``detail``'s
    runs carry another machine's fingerprint.
    """
    machine = machine or _machine.describe_machine()
    path = output_path(name_or_path, machine)
    check_writable(path, machine)
    others = _run_fingerprints(detail) - {machine.get("fingerprint")}
    if others:
        raise ResultsConflictError(
            f"{path}: runs of machines {sorted(others)} given with results of "
            f"{machine.get('fingerprint')} ({machine.get('label')}); they are never filed together"
        )
    record = build_record(figures, machine=machine, command=command or reproduce_command(), detail=detail)
    if section is not None:
        existing = read_json(path) if path.exists() else {}
        sections = dict(existing.get("sections", {}))
        sections[section] = {key: record[key] for key in ("commit", "date", "command")}
        record["figures"] = dict(existing.get("figures", {}), **{section: record["figures"]})
        record["detail"] = dict(existing.get("detail", {}), **{section: record.get("detail")})
        record["sections"] = sections
    write_json_atomic(path, redact(record), indent=1)  # a setting or command holding a token: <redacted>
    return path


def read_result(path: str | Path) -> dict:
    """A result record; a file that is not one is named in the error."""
    record = read_json(path)
    missing = [key for key in RECORD_KEYS if not isinstance(record, dict) or key not in record]
    if missing:
        raise ValueError(f"{path}: not a results record (missing {', '.join(missing)})")
    return record


class ResultTarget:
    """A benchmark's results file, claimed before the work: ``--output`` (a ``.json`` path) or the benchmark's name
    under ``benchmarks/results/<this machine's kind>/``; a file of another machine kind is refused at once."""

    def __init__(self, name_or_path: str | Path, machine: dict | None = None):
        self.machine = machine or _machine.describe_machine()
        self.path = output_path(name_or_path, self.machine)
        check_writable(self.path, self.machine)

    def write(
        self, figures: dict, *, detail: dict | None = None, command: str | None = None, section: str | None = None
    ) -> Path:
        path = write_result(self.path, figures, detail=detail, machine=self.machine, command=command, section=section)
        print(f"wrote {path}")
        return path
