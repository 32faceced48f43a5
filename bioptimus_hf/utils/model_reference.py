"""What a model or tokenizer flag may name: a local directory (or file) or a Hub id, checked as soon as the flags are
parsed (:func:`check_model_references`), so a missing folder is named by its flag before anything loads, not taken
for a Hub id by ``from_pretrained``."""

from __future__ import annotations

import dataclasses
import os


# Flags naming one model or tokenizer by path or Hub id (a list-valued flag, e.g. task-difficulty's
# ``LABEL=PATH`` models, is checked by its command, entry by entry).
MODEL_REFERENCE_FIELDS = frozenset(
    {"model_name_or_path", "tokenizer_name", "base_tokenizer", "teacher_model_name_or_path"}
)


def check_model_reference(value: str, flag: str) -> None:
    """Refuse ``value`` (given as ``--flag``) unless it is an existing path or a well-formed Hub id (``name`` or
    ``namespace/name``): a ``ValueError`` naming the flag."""
    if os.path.exists(value):
        return
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        raise ValueError(
            f"--{flag} {value or repr(value)}: neither a directory nor a Hub id (no such directory; a Hub id is "
            "'name' or 'namespace/name')"
        ) from None


def check_model_references(parsed) -> None:
    """:func:`check_model_reference` for the :data:`MODEL_REFERENCE_FIELDS` of parsed argument dataclasses."""
    for args in parsed:
        for field in dataclasses.fields(args) if dataclasses.is_dataclass(args) else ():
            value = getattr(args, field.name, None)
            if field.name in MODEL_REFERENCE_FIELDS and isinstance(value, str):
                check_model_reference(value, field.name)
