"""Config files: where the packaged ones are, how a command names one, how one is read, and what its relative
paths mean.

* **Packaged configs.** The repository's ``configs/*.yaml`` ship inside the package as ``bioptimus_hf/configs/``
  (``setup.py`` maps the folder), so ``bioptimus pretrain demo_minilm`` works wherever the package is installed.
* **Naming one** (:func:`resolve_config`): a path to an existing file wins; otherwise a packaged config's name,
  spelt ``demo_minilm``, ``demo_minilm.yaml`` or ``configs/demo_minilm.yaml`` (the checkout's spelling, so that
  commands written from a checkout run from anywhere).
* **Reading one** (:func:`read_config`): a json or yaml mapping of flag names to values; a missing file or a syntax
  error is one message naming the file, line and column.
* **Relative paths in it** are relative to the config file's folder, for the fields that name data to read
  (:data:`INPUT_PATH_FIELDS`, and :data:`NAME_OR_PATH_FIELDS` where that path exists: else the value is a Hub id or
  a name, e.g. ``bert-base-uncased``, the curriculum ``bioptimus``). Outputs (:data:`OUTPUT_PATH_FIELDS`) stay
  relative to the working directory, like every path given as a flag. A value that exists only relative to the
  working directory is still taken from there, with a ``FutureWarning``. Nested mappings (a study's
  ``pretraining_args``, ``ner_args``, ``arms``) follow the same rule.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import yaml


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")

# Fields naming files or folders a command reads: relative values are relative to the config file.
INPUT_PATH_FIELDS = frozenset(
    {
        "train_file",
        "validation_file",
        "train_files",
        "heldout_files",
        "corpus_files",
        "init_corpus_files",
        "tokenizer_train_files",
        "analysis_corpus",
        "input_file",
        "input_files",
        "data_dir",
        "data_dirs",
        "blurb_dir",
        "ner_dir",
        "ner_data_dirs",
        "run_dir",
        "reference_results",
        "config",
        "ner_config",
    }
)
# Fields naming a Hub id, a built-in name or a path: relative to the config file where that path exists.
NAME_OR_PATH_FIELDS = frozenset(
    {
        "model_name_or_path",
        "tokenizer_name",
        "base_tokenizer",
        "teacher_model_name_or_path",
        "config_name",
        "student_config_name",
        "dataset_name",
        "curriculum",
        "deepspeed",
        "fsdp_config",
        "accelerator_config",
        "resume_from_checkpoint",
    }
)
# Fields naming what a command writes: relative to the working directory, never to the config file.
OUTPUT_PATH_FIELDS = frozenset(
    {"output_dir", "output_file", "output_plot", "results_dir", "staging_dir", "logging_dir", "cache_dir"}
)


def packaged_configs_dir() -> Path:
    """The folder of the packaged configs: ``bioptimus_hf/configs`` of an installed wheel, else the checkout's
    ``configs/`` beside the package (a source tree or an editable install)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "configs"
    return installed if installed.is_dir() else package.parent / "configs"


def packaged_config_names() -> list[str]:
    """The names of the packaged configs (file names less the suffix), sorted."""
    folder = packaged_configs_dir()
    if not folder.is_dir():
        return []
    return sorted(path.stem for path in folder.iterdir() if path.suffix in CONFIG_SUFFIXES)


def packaged_config(name: str) -> Path | None:
    """The packaged config called ``name`` (``demo_minilm``, ``demo_minilm.yaml`` or ``configs/demo_minilm.yaml``),
    or None."""
    parts = Path(name).parts
    if len(parts) == 2 and parts[0] == "configs":
        parts = parts[1:]
    if len(parts) != 1:
        return None
    folder = packaged_configs_dir()
    stem = Path(parts[0])
    candidates = (
        [folder / stem] if stem.suffix in CONFIG_SUFFIXES else [folder / f"{stem}{s}" for s in CONFIG_SUFFIXES]
    )
    return next((path for path in candidates if path.is_file()), None)


def resolve_config(reference: str | os.PathLike) -> Path:
    """The config file ``reference`` names: an existing file, else a packaged config of that name."""
    path = Path(reference)
    if path.is_file():
        return path
    packaged = packaged_config(str(reference))
    if packaged is not None:
        return packaged
    names = ", ".join(packaged_config_names()) or "none"
    raise FileNotFoundError(f"config file {reference}: no such file, nor a packaged config (packaged: {names})")


def read_config(reference: str | os.PathLike) -> dict[str, Any]:
    """The mapping of flag names to values in a json/yaml config file (a path or a packaged config's name), its
    relative input paths made relative to the file's folder. A bad file is a ``ValueError`` (or
    ``FileNotFoundError``) whose message names the file, with the line and column of a syntax error."""
    path = resolve_config(reference)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"config file {path}: cannot be read ({error})") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"config file {path}, line {error.lineno}, column {error.colno}: {error.msg}") from None
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ValueError(f"config file {path}{_yaml_error_place(error)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(
            f"config file {path}: must hold a mapping of flag names to values, not a {type(data).__name__}"
        )
    return rebase_paths(data, path.parent)


def _yaml_error_place(error: yaml.YAMLError) -> str:
    """``, line L, column C: problem`` of a yaml error, on one line."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    if mark is None:
        return f": {problem}"
    return f", line {mark.line + 1}, column {mark.column + 1}: {problem}"


def rebase_paths(mapping: dict[str, Any], folder: str | os.PathLike) -> dict[str, Any]:
    """``mapping`` with the relative paths of its input fields (nested mappings included) made relative to
    ``folder`` (see the module's docstring for the rule)."""
    rebased = {}
    for key, value in mapping.items():
        if key in INPUT_PATH_FIELDS or key in NAME_OR_PATH_FIELDS:
            must_exist = key in NAME_OR_PATH_FIELDS
            if isinstance(value, str):
                value = _rebase(key, value, folder, must_exist)
            elif isinstance(value, list):
                value = [_rebase(key, v, folder, must_exist) if isinstance(v, str) else v for v in value]
        elif isinstance(value, dict):
            value = rebase_paths(value, folder)
        elif isinstance(value, list):
            value = [rebase_paths(v, folder) if isinstance(v, dict) else v for v in value]
        rebased[key] = value
    return rebased


def _rebase(key: str, value: str, folder: str | os.PathLike, must_exist: bool) -> str:
    if not value or os.path.isabs(value) or value.startswith("~") or str(folder) in ("", "."):
        return value
    beside_config = os.path.normpath(os.path.join(folder, value))
    if os.path.exists(beside_config):
        return beside_config
    if os.path.exists(value):
        warnings.warn(
            f"config {key}: {value} is found relative to the working directory, not to the config file's folder "
            f"{folder}; write it relative to the config file (relative to the working directory is deprecated)",
            FutureWarning,
            stacklevel=3,
        )
        return value
    return value if must_exist else beside_config
