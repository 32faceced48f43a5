"""Config files: the packaged ones (``configs/``, by path or name), how one is read (json or yaml; a bad one is one
message with file, line and column), and its relative input paths, relative to the config's folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")

# Fields naming files or folders a command reads: relative values are relative to the config file.
INPUT_PATH_FIELDS = frozenset(
    "train_file validation_file train_files heldout_files corpus_files init_corpus_files "
    "tokenizer_train_files analysis_corpus input_file input_files data_dir data_dirs blurb_dir ner_dir "
    "ner_data_dirs run_dir reference_results ner_config".split()
)
# Fields naming a Hub id, a built-in name or a path: relative to the config file where that path exists.
NAME_OR_PATH_FIELDS = frozenset(
    "model_name_or_path tokenizer_name base_tokenizer teacher_model_name_or_path config_name "
    "student_config_name dataset_name curriculum deepspeed fsdp_config accelerator_config "
    "resume_from_checkpoint".split()
)
# Fields naming what a command writes: relative to the working directory, never to the config file.
OUTPUT_PATH_FIELDS = frozenset(
    "output_dir output_file output_plot results_dir staging_dir logging_dir cache_dir".split()
)


def packaged_configs_dir() -> Path:
    """``bioptimus_hf/configs`` of an installed wheel, else the checkout's ``configs/`` beside the package."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "configs"
    return installed if installed.is_dir() else package.parent / "configs"


def packaged_config_names() -> list[str]:
    """The names of the packaged configs (file names less the suffix), sorted."""
    return sorted(path.stem for path in packaged_configs_dir().glob("*") if path.suffix in CONFIG_SUFFIXES)


def resolve_config(reference: str | os.PathLike) -> Path:
    """The config file ``reference`` names: an existing file, else the packaged config of that name."""
    path = Path(reference)
    if path.is_file():
        return path
    if path.parent in (Path("."), Path("configs")):  # a packaged config's name, or its path in the checkout
        folder = packaged_configs_dir()
        for candidate in [folder / path.name, *(folder / f"{path.name}{suffix}" for suffix in CONFIG_SUFFIXES)]:
            if candidate.is_file():
                return candidate
    names = ", ".join(packaged_config_names()) or "none"
    raise FileNotFoundError(f"config file {reference}: no such file, nor a packaged config (packaged: {names})")


def read_config(reference: str | os.PathLike) -> dict[str, Any]:
    """A config file's mapping of flag names to values (:func:`rebase_paths`); a bad file is a ``ValueError``."""
    path = resolve_config(reference)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"config file {path}: cannot be read ({error})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"config file {path}, line {error.lineno}, column {error.colno}: {error.msg}") from None
    except yaml.YAMLError as error:
        mark, problem = (
            getattr(error, "problem_mark", None),
            getattr(error, "problem", None) or " ".join(str(error).split()),
        )
        place = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValueError(f"config file {path}{place}: {problem}") from None
    if not isinstance(data, (dict, type(None))):
        raise ValueError(
            f"config file {path}: must hold a mapping of flag names to values, not a {type(data).__name__}"
        )
    return rebase_paths(data or {}, path.parent)


def rebase_paths(value: Any, folder: str | os.PathLike, key: str | None = None) -> Any:
    """``value`` (a config's mapping, nested ones included) with its input paths relative to ``folder``."""
    if isinstance(value, dict):
        return {name: rebase_paths(item, folder, name) for name, item in value.items()}
    if isinstance(value, list):
        return [rebase_paths(item, folder, key) for item in value]
    if not isinstance(value, str) or key not in INPUT_PATH_FIELDS | NAME_OR_PATH_FIELDS or not value:
        return value
    if os.path.isabs(value) or value.startswith("~") or str(folder) in ("", "."):
        return value
    beside_config = os.path.normpath(os.path.join(folder, value))
    return beside_config if key in INPUT_PATH_FIELDS or os.path.exists(beside_config) else value
