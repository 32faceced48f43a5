"""Reading and writing files so that errors name the file and an interruption never leaves half a file."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def read_json(path: str | os.PathLike, missing: str | None = None) -> Any:
    """A JSON file's content; errors name the file (``missing``: the message when it does not exist)."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(missing or f"{path} not found") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None


def current_umask() -> int:
    """This process's umask (Linux's ``/proc/self/status``; elsewhere set and restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, fsync it, then rename it over ``path``; with the mode
    ``open()`` would give it (0666 less the umask), not ``mkstemp``'s private 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o666 & ~current_umask())
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def write_json_atomic(path: str | os.PathLike, data: Any, **dump_options: Any) -> Path:
    options = {"indent": 2, "default": str, **dump_options}
    return write_text_atomic(path, json.dumps(data, **options) + "\n")


def _exchange(first: Path, second: Path) -> bool:
    """Atomically swap two directories (Linux renameat2); False where the system cannot."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    return result == 0


def replace_directory(new: Path, target: Path) -> None:
    """Move the complete directory ``new`` to ``target``, replacing any ``target`` without a moment with neither: on
    Linux one ``renameat2(RENAME_EXCHANGE)``; elsewhere the old ``target`` renamed ``<target>.old`` first (which
    ``releases.writer.recover_interrupted_replacements`` puts back if the process dies before the new one is in)."""
    if not target.exists():
        new.rename(target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # now holds the previous release
    else:
        old = target.with_name(target.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        target.rename(old)
        new.rename(target)
        shutil.rmtree(old)
    _fsync_directory(target.parent)


def sync_tree(directory: Path) -> None:
    """Flush the files' contents to disk before the rename publishes them."""
    for path in directory.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


@contextlib.contextmanager
def writing_directory(target: str | os.PathLike) -> Iterator[Path]:
    """Write a directory of outputs all at once: yield ``<target>.partial``, then swap it into place. An interrupted
    writer leaves ``target`` as it was, never half of the new one; a stale ``.partial`` is discarded first."""
    target = Path(target)
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    sync_tree(partial)
    replace_directory(partial, target)
