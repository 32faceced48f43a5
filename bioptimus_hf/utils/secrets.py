"""What a record, log, lock, card or upload may hold: never a secret.

A secret is the value of a setting named as a credential (``hub_token``, anything ending in ``token`` or
``api_key`` or holding ``password``/``secret``/``credential``; not ``mask_token``), ``HF_TOKEN``, any token this
process was handed for the Hub (:func:`remember_secret`), and in text anything that looks like a Hub token.
:func:`redact` replaces each by :data:`REDACTED`; every writer of a record calls it."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any


REDACTED = "<redacted>"
TOKEN_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# Shorter values are not searched for in text: a one-character "token" would redact every such character.
MIN_SECRET_LENGTH = 6

_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_CREDENTIAL_WORDS = frozenset({"password", "passwd", "secret", "secrets", "credential", "credentials", "apikey"})
# Names ending in "token" that are no credential: a tokenizer's special tokens, per-token counts.
_NOT_CREDENTIALS = frozenset({"mask", "pad", "cls", "sep", "unk", "bos", "eos", "per"})
# A flag with its value on a command line (``--hub_token T``, ``--hub_token=T``), or ``name: value``/``name=value``
# on one line (a sentence ending "the same token:" is followed by no token on the next).
_FLAG_VALUE = re.compile(r"(?P<name>--[A-Za-z][\w-]*)(?P<sep>=|\s+)(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_NAMED_VALUE = re.compile(
    r"(?P<name>\b[A-Za-z][\w-]*)(?P<sep>['\"]?[ \t]*[:=][ \t]*)(?P<value>'[^']*'|\"[^\"]*\"|[^\s,)}'\"]+)"
)

# A Hub token's shape (hf_ and 34 random letters and digits); the capital tells it from a long snake_case name.
_TOKEN_SHAPE = re.compile(r"\bhf_(?=\w*[A-Z])\w{30,}")

_remembered: set[str] = set()


def is_secret_name(name: str) -> bool:
    """Whether a setting, key or flag named ``name`` holds a credential (``--`` and case ignored)."""
    words = [w.lower() for w in _WORDS.findall(str(name))]
    if not words:
        return False
    if _CREDENTIAL_WORDS.intersection(words) or words[-2:] == ["api", "key"]:
        return True
    return words[-1] == "token" and (len(words) == 1 or words[-2] not in _NOT_CREDENTIALS)


def remember_secret(value: str | None) -> None:
    """Add ``value`` (a token read from the user) to what :func:`redact` removes from any text of this process."""
    if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
        _remembered.add(value)


def secret_values() -> list[str]:
    """Every known secret value: the remembered ones and the token environment variables', longest first."""
    values = set(_remembered)
    values.update(v for v in (os.environ.get(name) for name in TOKEN_ENV_VARS) if v and len(v) >= MIN_SECRET_LENGTH)
    return sorted(values, key=len, reverse=True)


def redact_text(text: str) -> str:
    """``text`` with every known secret value, and the value of every credential flag or ``name: value``, replaced."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    text = _TOKEN_SHAPE.sub(REDACTED, text)

    def named(match: re.Match) -> str:
        if (
            not is_secret_name(match["name"])
            or match["value"].strip("'\"") in (REDACTED, "")
            or match["value"][0] == "-"
        ):
            return match[0]  # redacted already, or no value: the name of another flag
        value = match["value"]
        quote = value[0] if value[0] in "'\"" else ""
        return f"{match['name']}{match['sep']}{quote}{REDACTED}{quote}"

    return _NAMED_VALUE.sub(named, _FLAG_VALUE.sub(named, text))


def redact_argv(argv: list[str] | tuple[str, ...], drop: bool = False) -> list[str]:
    """An argument list with the value after a credential flag, or of ``--flag=value``, replaced (``drop``: the
    flag left out with its value, for a command printed to be run again)."""
    shown: list[Any] = []
    after_flag = False
    for arg in argv:
        text = str(arg) if isinstance(arg, PurePath) else arg
        if after_flag:
            after_flag = False
            if not drop:
                shown.append(REDACTED)
        elif isinstance(text, str) and _is_secret_flag(text):
            after_flag = True
            if not drop:
                shown.append(text)
        elif isinstance(text, str) and drop and text.startswith("-") and is_secret_name(text.split("=")[0]):
            continue
        else:
            shown.append(redact(text))
    return shown


def _is_secret_flag(arg: str) -> bool:
    return arg.startswith("-") and "=" not in arg and is_secret_name(arg.lstrip("-"))


def redact(value: Any) -> Any:
    """``value`` with every secret replaced by :data:`REDACTED`: mappings and dataclasses (as dicts: a credential
    key's non-empty string value replaced, the rest redacted in turn), lists and tuples (as argument lists), strings.
    Other values are returned as they are."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {key: _redact_item(key, item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _redact_item(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return redact_argv(value)
    return value


def _redact_item(key: Any, item: Any) -> Any:
    if isinstance(item, (str, bytes)) and item and isinstance(key, str) and is_secret_name(key):
        return REDACTED
    return redact(item)


def holds_secret(data: bytes | str) -> bool:
    """Whether ``data`` contains a known secret value (:func:`secret_values`)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return any(value.encode() in raw for value in secret_values())
