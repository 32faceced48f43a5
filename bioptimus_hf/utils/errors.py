"""What the library raises for input it refuses: :class:`BadInput`, its message naming the flag, file or line at
fault (:func:`bad_input`, :func:`hub_failure`); :class:`RunFailed`, a run that did not do all it was asked; the one
line of a write the system refuses (:func:`os_error_message`). A command ends each in one line (``utils/cli.py``)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import traceback
from contextlib import contextmanager
from pathlib import Path


# What the library raises for input it refuses (a ConllFormatError is a ValueError).
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError)


class BadInput(ValueError):
    """Input a library run refuses, its message naming the flag, file or line at fault."""


class RunFailed(RuntimeError):
    """A run that did its work but not all it was asked (a release not published), its message saying what to do:
    a command ends it in one line, as bad input."""


@contextmanager
def bad_input(*errors: type[BaseException]):
    """Re-raise ``errors`` (default :data:`BAD_INPUT_ERRORS`) raised inside as :class:`BadInput`, chained."""
    caught = errors or BAD_INPUT_ERRORS
    try:
        yield
    except BadInput:
        raise
    except caught as error:
        raise BadInput(str(error)) from error


@contextmanager
def hub_failure(what: str, hint: str = ""):
    """Re-raise a failed Hub request (unreachable, token refused, server error) as :class:`BadInput`, ``<what>
    failed: <its first line>`` then ``hint`` (how to resume), no secret: the command ends it in one line."""
    from .hub_settings import hub_request_errors
    from .secrets import redact_text

    try:
        yield
    except hub_request_errors() as error:
        first = (str(error).strip() or type(error).__name__).splitlines()[0]
        raise BadInput(redact_text(f"{what} failed: {first}" + (f"\n{hint}" if hint else ""))) from None


# A write the system refuses, by errno: what an OSError says, or the errno or strerror inside the message of the
# error that wraps it while weights are saved (safetensors' "(os error 28)", torch's "strerror: Read-only ...").
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_OUTPUT_ONLY = (errno.ENOENT, errno.EACCES)  # faults of the command's own outputs only: else an input's, bad input
_STRERRORS = {os.strerror(code): code for code in (*_NO_SPACE, errno.EROFS, *_OUTPUT_ONLY)}
_MESSAGE_ERRNO = re.compile(r"os error (\d+)|\[errno (\d+)\]", re.IGNORECASE)
_MESSAGE_PATH = re.compile(r"at path \"([^\"]+)\"|Parent directory (.+) does not exist|File (.+) cannot be opened")
_STREAM_WRITER = re.compile(r"inline_container\.cc|PytorchStreamWriter")  # torch.save's failed write, cause unsaid
_LOW_SPACE = 16 * 2**20


def os_error_message(error: BaseException, output_dirs) -> str | None:
    """The one line a command ends ``error`` (or what it was raised from) with when it is a write the system refused
    (``utils/cli.py:exit_on_bad_input``); None otherwise."""
    output_dirs = [Path(d) for d in output_dirs if d]
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
    ``output_dirs`` that the failing code held (an open file, a path)."""
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
