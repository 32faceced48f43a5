"""What a model or tokenizer flag may name: a local directory (or file) or a Hugging Face Hub id, checked before
anything loads.

``from_pretrained`` given a folder that does not exist takes it for a Hub id and fails with huggingface_hub's
``Repo id must be in the form 'repo_name' or 'namespace/repo_name'``, after the command has read its data. The
parser (``commands/config_parser.py``) checks the flags of :data:`MODEL_REFERENCE_FIELDS` with
:func:`check_model_reference` as soon as they are parsed, so the message names the flag and comes first.
"""

from __future__ import annotations

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
