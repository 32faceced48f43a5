"""How a command ends: bad input in one line ``error: <message>``, status 1; a line that cannot be parsed, status 2;
Ctrl-C or SIGTERM in one line, status 130 or 143. The library never exits: it raises ``utils/errors.py``'s BadInput."""

from __future__ import annotations

import gc
import signal
import sys
import threading
from contextlib import contextmanager, suppress
from typing import NoReturn

from .errors import BAD_INPUT_ERRORS, BadInput, RunFailed, os_error_message
from .secrets import redact_text


USAGE_ERROR_STATUS = 2  # argparse's and the shells' convention for a command line that cannot be parsed
INTERRUPTED_STATUS = 128 + signal.SIGINT  # 130: the shells' status of a command ended by Ctrl-C
TERMINATED_STATUS = 128 + signal.SIGTERM  # 143: ended by SIGTERM (kill, torchrun, a batch scheduler)


@contextmanager
def exit_on_bad_input(*errors: type[BaseException], output_dirs=()):
    """Turn :class:`BadInput`, :class:`RunFailed`, ``errors`` (default :data:`BAD_INPUT_ERRORS`) and a refused write
    (a full disk, ``output_dirs`` removed) into ``SystemExit("error: ...")``, a token in it redacted."""
    caught = (BadInput, RunFailed, *(errors or BAD_INPUT_ERRORS))
    try:
        yield
    except Exception as error:  # noqa: BLE001 - what is neither is raised again as it is
        refused = None if isinstance(error, (BadInput, RunFailed)) else os_error_message(error, output_dirs)
        if refused is None and not isinstance(error, caught):
            raise
        raise SystemExit(redact_text(f"error: {refused or error}")) from None


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
        with suppress(Exception):  # a bar that cannot close must not hide the interrupt
            bar.close()


def obey_interrupts() -> None:
    """Let Ctrl-C and SIGTERM in: ``cmd &`` in a script inherits SIGINT ignored; a launcher may leave both blocked."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


@contextmanager
def exit_on_interrupt():
    """End the block on Ctrl-C (SIGTERM) with one line, ``interrupted`` (``terminated``), status 130 (143), after its
    ``finally`` blocks; then both signals are ignored, so a second Ctrl-C cannot break the clean-up into a traceback."""
    main = threading.current_thread() is threading.main_thread()
    claim = main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    if claim:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except KeyboardInterrupt as caught:
        if main:
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
