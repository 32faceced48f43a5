"""A masked LM loaded from a checkpoint that may have no MLM head (a sentence encoder, a plain ``BertModel``), and a
resumed run's checkpoint loaded without the warning its tied decoder gives: in place of transformers' expected
warnings (the head's keys MISSING, "This checkpoint seem corrupted", missing tied keys on resume) one line says the
head starts new; any other warning is shown as transformers writes it."""

from __future__ import annotations

import ast
import logging
import re
from contextlib import contextmanager
from typing import Any, Iterator


logger = logging.getLogger(__name__)

# The logger transformers' from_pretrained writes its load report and weight-tying warnings to.
LOADING_LOGGER = "transformers.modeling_utils"
_LOAD_REPORT = "LOAD REPORT"
_CORRUPTED_TIE = re.compile(r"This checkpoint seem corrupted\. .* to tie (\S+) to (\S+), but both are absent")
# The logger and warning of the Trainer loading a checkpoint to resume from.
RESUME_LOGGER = "transformers.trainer"
_MISSING_ON_RESUME = re.compile(r"There were missing keys in the checkpoint model loaded: (\[.*\])\.$")


class _HoldBack(logging.Filter):
    """Keeps the records of a load instead of letting them through, to be shown or dropped after it."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False


def headless_keys(model: Any, loading_info: dict[str, Any]) -> list[str]:
    """The missing keys of a headless base's load (all outside the base model, e.g. ``cls.predictions.*``, the
    checkpoint's extras only a pooler, nothing mismatched); [] when the load is anything else."""
    prefix = f"{getattr(model, 'base_model_prefix', '')}."
    missing = sorted(loading_info.get("missing_keys") or ())
    unexpected = loading_info.get("unexpected_keys") or ()
    if not missing or loading_info.get("mismatched_keys") or loading_info.get("error_msgs"):
        return []
    if any(key.startswith(prefix) for key in missing) or any("pooler." not in key for key in unexpected):
        return []
    return missing


def _expected(record: logging.LogRecord, head: list[str]) -> bool:
    message = record.getMessage()
    if _LOAD_REPORT in message:
        return True
    tied = _CORRUPTED_TIE.search(message)
    return tied is not None and set(tied.groups()) <= set(head)


def _load_held_back(auto_class: Any, name_or_path: str, kwargs: dict) -> tuple[Any, dict, list, Any]:
    """``auto_class.from_pretrained`` with its loading info, the load's log records held back: ``(model, info,
    records, the logger to show them on)``."""
    from transformers.utils import logging as hf_logging

    loading_logger = hf_logging.get_logger(LOADING_LOGGER)
    held = _HoldBack()
    loading_logger.addFilter(held)
    try:
        model, loading_info = auto_class.from_pretrained(name_or_path, output_loading_info=True, **kwargs)
    finally:
        loading_logger.removeFilter(held)
    return model, loading_info, held.records, loading_logger


def load_masked_lm(name_or_path: str, **kwargs: Any):
    """``AutoModelForMaskedLM.from_pretrained(name_or_path, **kwargs)``, a headless base's expected warnings
    replaced by one line (module docstring)."""
    from transformers import AutoModelForMaskedLM

    from .distributed import is_main_process

    model, loading_info, records, loading_logger = _load_held_back(AutoModelForMaskedLM, name_or_path, kwargs)
    head = headless_keys(model, loading_info)
    for record in records:
        if not (head and _expected(record, head)):
            loading_logger.handle(record)
    if head and is_main_process():
        modules = sorted({".".join(key.split(".")[:2]) + ".*" for key in head})
        logger.warning(
            "%s has no MLM head: it starts new (%s, %d tensors)", name_or_path, ", ".join(modules), len(head)
        )
    return model


_NEW_HEADS_SAID: set[tuple[str, str]] = set()


def load_with_new_head(auto_class: Any, name_or_path: str, **kwargs: Any):
    """``auto_class.from_pretrained(name_or_path, **kwargs)`` for a fine-tune (``AutoModelForTokenClassification``...):
    transformers' load report of a new task head (the missing keys and the unused ones all outside the base model,
    e.g. ``classifier.*`` and the MLM head ``cls.*``, nothing mismatched) is replaced by one line, said once per
    process (a run loads the model again for every seed); any other report is shown as transformers writes it."""
    from .distributed import is_main_process

    model, info, records, loading_logger = _load_held_back(auto_class, name_or_path, kwargs)
    prefix = f"{getattr(model, 'base_model_prefix', '')}."
    missing, unused = sorted(info.get("missing_keys") or ()), sorted(info.get("unexpected_keys") or ())
    expected = not (info.get("mismatched_keys") or info.get("error_msgs")) and not any(
        key.startswith(prefix) and "pooler." not in key for key in [*missing, *unused]
    )
    for record in records:
        if not (expected and _LOAD_REPORT in record.getMessage()):
            loading_logger.handle(record)
    said = (str(name_or_path), type(model).__name__)
    if expected and missing and said not in _NEW_HEADS_SAID and is_main_process():
        _NEW_HEADS_SAID.add(said)
        new, unused = (", ".join(sorted({key.split(".")[0] + ".*" for key in keys})) for keys in (missing, unused))
        logger.warning(
            f"{name_or_path} as {said[1]}: the task head starts new ({new})" + (unused and f"; not used: {unused}")
        )
    return model


def tied_parameter_names(model: Any) -> set[str]:
    """The names under which a parameter appears after its first name: the tied ones a checkpoint stores once."""
    seen: set[int] = set()
    tied: set[str] = set()
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if id(parameter) in seen:
            tied.add(name)
        seen.add(id(parameter))
    return tied


class _TiedKeysOnly(logging.Filter):
    def __init__(self, tied: set[str]) -> None:
        super().__init__()
        self.tied = tied

    def filter(self, record: logging.LogRecord) -> bool:
        match = _MISSING_ON_RESUME.match(record.getMessage())
        if match is None:
            return True
        try:
            missing = set(ast.literal_eval(match.group(1)))
        except (ValueError, SyntaxError):
            return True
        return not (missing and missing <= self.tied)


@contextmanager
def tied_keys_expected(model: Any) -> Iterator[None]:
    """While it lasts, the Trainer's warning of missing keys on resume is dropped when the keys are all tied
    parameters of ``model`` (stored once, under the name they share); any other missing key is still said."""
    from transformers.utils import logging as hf_logging

    resume_logger = hf_logging.get_logger(RESUME_LOGGER)
    quiet = _TiedKeysOnly(tied_parameter_names(model))
    resume_logger.addFilter(quiet)
    try:
        yield
    finally:
        resume_logger.removeFilter(quiet)
