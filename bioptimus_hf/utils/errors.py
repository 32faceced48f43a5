"""What the library raises for input it refuses: :class:`BadInput`, its message naming the flag, file or line at
fault (:func:`bad_input`, :func:`hub_failure`); a command ends it in one line (``utils/cli.py``)."""

from __future__ import annotations

from contextlib import contextmanager


# What the library raises for input it refuses (a ConllFormatError is a ValueError).
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError)


class BadInput(ValueError):
    """Input a library run refuses, its message naming the flag, file or line at fault."""


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
