"""Every shipped config runs on a plain install: its training arguments parse and its ``report_to`` resolves to
reporters that exist, without tensorboard (an extra) importable, and without a warning."""

import dataclasses
import importlib.abc
import importlib.util
import logging
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from transformers import TrainingArguments
from transformers.integrations import get_reporting_integration_callbacks

from bioptimus_hf.commands import parse_args
from helpers import flags


CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))
TRAINING_FIELDS = {f.name for f in dataclasses.fields(TrainingArguments)}
MISSING = ("tensorboard", "tensorboardX")
GPU_SETTINGS = {"bf16", "ddp_backend", "torch_compile"}


class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@pytest.fixture
def without_tensorboard(monkeypatch):
    """tensorboard as on a plain install: not found (transformers asks importlib.util.find_spec), not importable."""
    for name in [n for n in sys.modules if n.split(".")[0] in MISSING]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NotInstalled(), *sys.meta_path])
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name.split(".")[0] in MISSING else find_spec(name, *args),
    )


def training_settings(config: dict) -> list[dict]:
    """The mappings of a config that hold training arguments: the config itself (a training script's), and the
    argument mappings a study hands to its runs (``pretraining_args``...)."""
    mappings = [config, *(value for value in config.values() if isinstance(value, dict))]
    return [{k: v for k, v in m.items() if k in TRAINING_FIELDS} for m in mappings]


def test_the_hidden_tensorboard_is_what_made_the_shipped_reporter_fail(without_tensorboard, tmp_path):
    (args,) = parse_args((TrainingArguments,), ["--output_dir", str(tmp_path), "--report_to", "tensorboard"])
    (reporter,) = get_reporting_integration_callbacks(args.report_to)
    with pytest.raises(RuntimeError, match="tensorboard"):
        reporter()
    with pytest.raises(ImportError):
        import tensorboard  # noqa: F401


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_config_parses_and_its_reporters_exist_without_tensorboard(
    without_tensorboard, tmp_path, caplog, config
):
    settings = [s for s in training_settings(yaml.safe_load(config.read_text())) if s]
    assert settings, f"{config.name} holds no training arguments"
    for training in settings:
        # Parsed as the scripts parse them, but for the GPU recipes' settings that TrainingArguments refuses (or
        # warns about) on a machine without one.
        here = {k: v for k, v in training.items() if k not in GPU_SETTINGS}
        (args,) = parse_args((TrainingArguments,), flags({**here, "output_dir": str(tmp_path)}))
        # The reporters the Trainer would build, as it builds them (a missing one raises here).
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with caplog.at_level(logging.WARNING):
                for reporter in get_reporting_integration_callbacks(args.report_to):
                    reporter()
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
