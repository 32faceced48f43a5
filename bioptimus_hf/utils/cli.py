"""How a command ends: bad input in one line ``error: <message>``, status 1; a command line that cannot be parsed in
one line, status 2; Ctrl-C or SIGTERM in one line, status 130 or 143. The library never exits: a checking step
re-raises what it refuses as :class:`BadInput` (:func:`bad_input`) and the command ends it (:func:`exit_on_bad_input`);
a ``ValueError`` from deep inside training is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import gc
import os
import re
import shutil
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from .secrets import redact_text


USAGE_ERROR_STATUS = 2  # argparse's and the shells' convention for a command line that cannot be parsed
INTERRUPTED_STATUS = 128 + signal.SIGINT  # 130: the shells' status of a command ended by Ctrl-C
TERMINATED_STATUS = 128 + signal.SIGTERM  # 143: ended by SIGTERM (kill, torchrun, a batch scheduler)

# What the library raises for input it refuses (a ConllFormatError is a ValueError).
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError)


class BadInput(ValueError):
    """Input a library run refuses, its message naming the flag, file or line at fault."""


class RunFailed(RuntimeError):
    """A run that did its work but not all it was asked (a release not published), its message saying what to do:
    a command ends it in one line, as bad input."""


@contextmanager
def bad_input(*errors: type[BaseException]):
    """Re-raise ``errors`` (default :data:`BAD_INPUT_ERRORS`) raised inside as :class:`BadInput`, the original
    chained: what a checking step of a library run refuses."""
    caught = errors or BAD_INPUT_ERRORS
    try:
        yield
    except BadInput:
        raise
    except caught as error:
        raise BadInput(str(error)) from error


@contextmanager
def exit_on_bad_input(*errors: type[BaseException]):
    """Turn :class:`BadInput`, :class:`RunFailed` and ``errors`` (default :data:`BAD_INPUT_ERRORS`) raised inside into
    ``SystemExit("error: <message>")``: for commands and scripts only (the library marks, :func:`bad_input`)."""
    caught = (BadInput, RunFailed, *(errors or BAD_INPUT_ERRORS))
    try:
        yield
    except caught as error:
        raise SystemExit(redact_text(f"error: {error}")) from None  # a token typed where a path goes: not echoed


# A write the system refuses, by errno: what an OSError says, or the errno or strerror inside the message of the
# error that wraps it while weights are saved (safetensors' "(os error 28)", torch's "strerror: Read-only ...").
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_OUTPUT_ONLY = (errno.ENOENT, errno.EACCES)  # faults of the command's own outputs only: else an input's, bad input
_STRERRORS = {os.strerror(code): code for code in (*_NO_SPACE, errno.EROFS, *_OUTPUT_ONLY)}
_MESSAGE_ERRNO = re.compile(r"os error (\d+)|\[errno (\d+)\]", re.IGNORECASE)
_MESSAGE_PATH = re.compile(r"at path \"([^\"]+)\"|Parent directory (.+) does not exist|File (.+) cannot be opened")
_STREAM_WRITER = re.compile(r"inline_container\.cc|PytorchStreamWriter")  # torch.save's failed write, cause unsaid
_LOW_SPACE = 16 * 2**20


@contextmanager
def exit_on_os_error(*output_dirs: str | os.PathLike | None):
    """End a write the system refuses (a full disk or quota, a read-only file system; ``output_dirs`` removed, or
    not writable, while the command runs) with one line ``error: <file>: <cause>; <what to do>``, status 1, no
    traceback; the error that wraps one while weights are saved too (its cause read from its message, else from
    the state of ``output_dirs``). Any other error passes."""
    try:
        yield
    except (BadInput, RunFailed):
        raise
    except Exception as error:  # noqa: BLE001 - what is not a refused write is raised again as it is
        message = os_error_message(error, [Path(d) for d in output_dirs if d])
        if message is None:
            raise
        raise SystemExit(redact_text(f"error: {message}")) from None


def os_error_message(error: BaseException, output_dirs: list[Path]) -> str | None:
    """The one line :func:`exit_on_os_error` ends ``error`` (or what it was raised from) with; None if it is no
    refused write."""
    while error is not None and not isinstance(error, (BadInput, RunFailed)):  # a check's refusal: bad input
        if (code := _errno(error, output_dirs)) is not None:
            break
        error = error.__cause__ or error.__context__
    else:
        return None
    path = _written_path(error, output_dirs) or (output_dirs[0] if output_dirs else None)
    under = next((d for d in output_dirs if path is not None and _within(path, d)), None)
    if code in _OUTPUT_ONLY and under is None:
        return None
    if code in _NO_SPACE:
        free = f" ({shutil.disk_usage(_existing(path)).free / 2**20:.1f} MiB free there)" if path else ""
        again = "free some space or use another --output_dir, then run the same command again"
        return f"{path or 'a write'}: {os.strerror(code)}{free}; {again}"
    if code == errno.ENOENT:
        what = f" ({path}: {os.strerror(code)})" if path != under else ""
        again = "delete what is left of it and run the same command again"
        return f"{under} was removed while the command wrote into it{what}; {again}"
    what = "on a writable file system" if code == errno.EROFS else "this process may write to"
    return f"{path or 'a write'}: {os.strerror(code)}; choose a --output_dir {what}"


def _errno(error: BaseException, output_dirs: list[Path]) -> int | None:
    if isinstance(error, OSError):
        return error.errno if error.errno in _STRERRORS.values() else None
    if not isinstance(error, RuntimeError) and type(error).__name__ != "SafetensorError":
        return None
    text = str(error)
    if found := _MESSAGE_ERRNO.search(text):
        code = int(found[1] or found[2])
        return code if code in _STRERRORS.values() else None
    if code := next((c for name, c in _STRERRORS.items() if name in text), None):
        return code
    if _STREAM_WRITER.search(text) or _MESSAGE_PATH.search(text):  # the state of the outputs says why
        for directory in output_dirs:
            if not directory.exists():
                return errno.ENOENT
            if os.statvfs(directory).f_flag & os.ST_RDONLY:
                return errno.EROFS
            if shutil.disk_usage(directory).free < _LOW_SPACE:
                return errno.ENOSPC
    return None


def _written_path(error: BaseException, output_dirs: list[Path]) -> Path | None:
    """The file ``error`` is about: its ``filename``, the path its message names, else the innermost path under
    ``output_dirs`` that the failing code held."""
    if isinstance(error, OSError) and error.filename:
        return Path(os.fsdecode(error.filename))
    if found := _MESSAGE_PATH.search(str(error)):
        return Path(next(group for group in found.groups() if group))
    for frame, _ in reversed(list(traceback.walk_tb(error.__traceback__))):
        for value in frame.f_locals.values():
            name = getattr(value, "name", value)  # an open file by its name
            if isinstance(name, (str, os.PathLike)) and 0 < len(str(name)) < 4096:
                if any(_within(Path(name), d) for d in output_dirs):
                    return Path(name)
    return None


def _within(path: Path, directory: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(directory))


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


@contextmanager
def exit_on_hub_error(what: str, hint: str = ""):
    """End a failed Hub request (unreachable, token refused, server error) with ``error: <what> failed: <its first
    line>`` then ``hint`` (how to resume), status 1, no traceback, no secret."""
    from .hub_settings import hub_request_errors

    try:
        yield
    except hub_request_errors() as error:
        first = (str(error).strip() or type(error).__name__).splitlines()[0]
        raise SystemExit(redact_text(f"error: {what} failed: {first}" + (f"\n{hint}" if hint else ""))) from None


def exit_on_usage_error(message: str) -> NoReturn:
    """End a command line that cannot be parsed: ``error: <message>`` on stderr, exit status 2, no usage dump."""
    print(redact_text(f"error: {message}"), file=sys.stderr)
    raise SystemExit(USAGE_ERROR_STATUS)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, as Ctrl-C raises KeyboardInterrupt: the same ``finally`` blocks run."""


def _raise_terminated(signum, frame) -> NoReturn:
    raise Terminated()


def _close_progress_bars() -> None:
    bars = getattr(sys.modules["tqdm"].tqdm, "_instances", ()) if "tqdm" in sys.modules else ()
    for bar in list(bars):
        try:
            bar.close()
        except Exception:  # noqa: BLE001 - a bar that cannot close must not hide the interrupt
            pass


@contextmanager
def exit_on_interrupt():
    """End the block on Ctrl-C (or SIGTERM) with one line, ``interrupted`` (``terminated``), and exit status 130
    (143), no traceback, after the ``finally`` blocks inside have run (they stop workers, remove partial files).
    SIGTERM is claimed only where its handler is the default, in the main thread; once interrupted the process
    ignores both signals, so that a second Ctrl-C cannot break the clean-up that follows into a traceback."""
    claim = (
        threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    )
    if claim:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except KeyboardInterrupt as caught:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        terminated = isinstance(caught, Terminated)
        gc.freeze()  # the exit skips collecting what the run built: seconds with torch loaded, on a busy machine
        _close_progress_bars()  # each on its own line, as far as it got; the last line is this one
        print("terminated" if terminated else "interrupted", file=sys.stderr, flush=True)
        raise SystemExit(TERMINATED_STATUS if terminated else INTERRUPTED_STATUS) from None
    finally:
        if claim and signal.getsignal(signal.SIGTERM) is _raise_terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
