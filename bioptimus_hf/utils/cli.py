"""How every script and command ends on bad input: one line, ``error: <message>``, exit status 1, no traceback;
and on a command line that cannot be parsed (an unknown flag, a bad choice): one line, exit status 2 (argparse's).

The library's refusals name the flag or file at fault in their message (``--window_stride 40 must be in
[0, 12)``, ``train.tsv, line 3: ...``), so that line is all the user needs. Wrap only the steps that check
input, not the whole run: a ``ValueError`` from deep inside training is a bug and keeps its traceback.

    with exit_on_bad_input():                       # a step of a main()
        schedule = resolve_run_schedule(...)

    @exit_on_bad_input(ValueError, FileExistsError)  # or a whole command whose every error is the user's
    def main(argv=None): ...
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import NoReturn


USAGE_ERROR_STATUS = 2  # argparse's and the shells' convention for a command line that cannot be parsed

# What the library raises for input it refuses (a ConllFormatError is a ValueError).
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError)


@contextmanager
def exit_on_bad_input(*errors: type[BaseException]):
    """Turn ``errors`` (default :data:`BAD_INPUT_ERRORS`) raised inside into ``SystemExit("error: <message>")``.

    A context manager, and a decorator too (``@exit_on_bad_input()``)."""
    caught = errors or BAD_INPUT_ERRORS
    try:
        yield
    except caught as error:
        raise SystemExit(f"error: {error}") from None


def exit_on_usage_error(message: str) -> NoReturn:
    """End a command line that cannot be parsed: ``error: <message>`` on stderr, exit status 2, no usage dump."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(USAGE_ERROR_STATUS)
