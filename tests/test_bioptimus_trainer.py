"""The Trainer-level API: ``BioptimusConfig`` + ``BioptimusTrainer`` on a raw text dataset release the curriculum's
four models; the README's own-script example and docs/curriculum.md's plain-``Trainer`` one run as written (their
base model swapped for the suite's tiny BERT);
``bioptimus pretrain`` is the same trainer (the same corpus gives bit-identical releases); typed settings are built
from a mapping as a config file holding it would give them."""

import json
import re
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, TrainingArguments

import run_pretraining
from bioptimus_hf.commands import parse_args
from bioptimus_hf.pretraining.bioptimus_config import PRETRAINING_ARGUMENT_TYPES, BioptimusConfig
from bioptimus_hf.pretraining.bioptimus_trainer import BioptimusTrainer, as_bioptimus_config
from bioptimus_hf.pretraining.phases import BIOPTIMUS_CURRICULUM
from bioptimus_hf.utils.config_mapping import CommandParser
from helpers import run_script
from helpers.pretraining import curriculum_run_flags


pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parents[1]
README_SECTION = "## The curriculum in your own script"
# The one substitution the test makes: the example's base model (a Hub download) becomes the suite's tiny BERT.
README_BASE = '"google-bert/bert-base-uncased"'


def readme_example() -> str:
    """The python block of the README's own-script section, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(README_SECTION) :]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_example_runs_as_written_to_four_releases(tmp_path, tiny_model_dir, monkeypatch):
    code = readme_example()
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 15, f"the README's example has {len(lines)} lines of code"
    assert code.count(README_BASE) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace(README_BASE, repr(str(tiny_model_dir))), "README.md", "exec"), {})

    releases = tmp_path / "bioptimus_out" / "releases"
    assert sorted(p.name for p in releases.iterdir()) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    ends = []
    for phase, release in zip(BIOPTIMUS_CURRICULUM, sorted(releases.iterdir())):
        info = json.loads((release / "bioptimus_phase.json").read_text())
        assert (info["version"], info["masking_unit"], info["masking_rate"]) == (
            phase.version,
            phase.masking_unit,
            phase.masking_rate,
        )
        assert info["heldout_mlm_loss"] is not None and info["run"]["packing"] is True
        assert info["run"]["max_seq_length"] == 64 and info["run"]["masked_only_prediction"] is True
        assert (release / "README.md").is_file()
        ends.append(info["end_step"])
    assert ends == [4, 12, 24, 40]  # 10/20/30/40% of max_steps 40
    model = AutoModelForMaskedLM.from_pretrained(releases / "v0.4")
    assert not any(p.isnan().any() for p in model.parameters())


CURRICULUM_SECTION = "## Using the curriculum in your own Trainer script"


def test_the_curriculum_docs_trainer_example_runs_as_written_to_four_releases(tmp_path, tiny_model_dir, monkeypatch):
    """docs/curriculum.md's own-``Trainer`` example, as written (its base model the suite's tiny BERT)."""
    text = (ROOT / "docs" / "curriculum.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text[text.index(CURRICULUM_SECTION) :], re.DOTALL).group(1)
    assert code.count(README_BASE) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace(README_BASE, repr(str(tiny_model_dir))), "curriculum.md", "exec"), {})
    releases = sorted((tmp_path / "out" / "releases").iterdir())
    assert [p.name for p in releases] == ["v0.1", "v0.2", "v0.3", "v0.4"]
    ends = [json.loads((release / "bioptimus_phase.json").read_text())["end_step"] for release in releases]
    assert ends == [4, 12, 24, 40]


def _state(release: Path) -> dict[str, torch.Tensor]:
    return AutoModelForMaskedLM.from_pretrained(release).state_dict()


def test_bioptimus_pretrain_is_the_trainer_on_the_same_corpus(monkeypatch, tmp_path, tiny_model_dir, make_corpus):
    """The command (corpus files, output directory, resume logic around the trainer) and the trainer given the same
    corpus as a ``datasets.Dataset`` release the same weights, bit for bit."""
    from datasets import load_dataset

    corpus = make_corpus(300)
    by_command = tmp_path / "command"
    run_script(monkeypatch, run_pretraining, curriculum_run_flags(tiny_model_dir, corpus, by_command, [2, 2, 2, 2]))

    by_trainer = tmp_path / "trainer"
    argv = curriculum_run_flags(tiny_model_dir, corpus, by_trainer, [2, 2, 2, 2])
    model_args, config = parse_args(PRETRAINING_ARGUMENT_TYPES, [str(a) for a in argv])
    texts = load_dataset("text", data_files={"train": [str(corpus)]}, encoding_errors="replace")["train"]
    trainer = BioptimusTrainer(model_args.model_name_or_path, args=config, train_dataset=texts)
    trainer.train()
    for version in ("v0.1", "v0.4"):
        ours, theirs = _state(by_trainer / "releases" / version), _state(by_command / "releases" / version)
        assert ours.keys() == theirs.keys()
        assert all(torch.equal(ours[k], theirs[k]) for k in ours), version
    recorded = json.loads((by_trainer / "releases" / "v0.4" / "bioptimus_phase.json").read_text())["run"]
    assert recorded["train_files"] == [Path(corpus).name] and recorded["init_strategy"] == "continued"


def test_the_trainer_takes_plain_training_arguments_and_refuses_a_run_without_steps(tmp_path, tiny_model_dir):
    args = TrainingArguments(output_dir=str(tmp_path / "o"), max_steps=8, learning_rate=3e-4, seed=5)
    config = as_bioptimus_config(args, None)
    assert isinstance(config, BioptimusConfig)
    assert (config.max_steps, config.learning_rate, config.seed, config.output_dir) == (8, 3e-4, 5, args.output_dir)
    assert (config.curriculum, config.init_strategy, config.max_seq_length) == ("bioptimus", "continued", 128)
    with pytest.raises(ValueError, match="--max_steps must be > 0"):
        BioptimusTrainer(str(tiny_model_dir), args=BioptimusConfig(output_dir=str(tmp_path / "p")))
    with pytest.raises(ValueError, match=r"phase_steps has 2 values for 4 curriculum phases"):
        BioptimusTrainer(
            str(tiny_model_dir), args=BioptimusConfig(output_dir=str(tmp_path / "q"), max_steps=8, phase_steps=[1, 2])
        )


# ------------------------------------------------------------------------------------------ settings from a mapping
def test_a_mapping_gives_the_dataclasses_a_config_file_holding_it_gives(tmp_path, monkeypatch):
    """The study's way in: yaml values converted to each field's type, lists from one value, as
    ``bioptimus pretrain config.yaml`` parses the same mapping."""
    import yaml

    mapping = {
        "model_name_or_path": "base",
        "output_dir": str(tmp_path / "out"),
        "single_phase": 0.4,  # a yaml float for a str field
        "phase_steps": [0.1, 0.2, 0.3, 0.4],
        "train_file": "corpus.txt",  # one value for a list field
        "init_strategy": "averaged",
        "init_norm_match": "false",  # a string for a bool field
        "max_steps": 12,
        "learning_rate": 5.0e-4,
        "lexical_warmup_steps": 0.1,
        "report_to": "none",
        "bulk_dropout": None,  # None: the default
    }
    config_file = tmp_path / "run.yaml"
    config_file.write_text(yaml.safe_dump(mapping))
    monkeypatch.chdir(tmp_path)  # the config in the working directory: its relative paths mean the same
    from_mapping = CommandParser(PRETRAINING_ARGUMENT_TYPES).parse_dict(mapping)
    from_file = parse_args(PRETRAINING_ARGUMENT_TYPES, [config_file.name])
    assert from_mapping[0] == from_file[0]
    assert from_mapping[1].to_dict() == from_file[1].to_dict()
    config = from_mapping[1]
    assert (config.single_phase, config.train_file, config.init_strategy) == ("0.4", ["corpus.txt"], "averaged")
    assert (
        config.init_norm_match is False and config.bulk_dropout is None and config.phase_steps == [0.1, 0.2, 0.3, 0.4]
    )


@pytest.mark.parametrize(
    "mapping, message",
    [
        ({"output_dir": "o", "no_such_flag": 1}, r"^unknown key no_such_flag; not an argument of PretrainingModel"),
        ({"output_dir": "o", "max_step": 1}, r"^unknown key max_step; did you mean max_steps\?$"),
        ({"output_dir": "o", "masking_stream": "random"}, r"^--masking_stream: invalid choice 'random'; choose from"),
        ({"output_dir": "o", "max_steps": "many"}, r"^--max_steps: invalid int value: 'many'$"),
        ({"output_dir": "o", "masked_only_prediction": "perhaps"}, r"^--masked_only_prediction: Truthy"),
        ({"output_dir": "o", "max_seq_length": [64, 128]}, r"^--max_seq_length: expected one value, got 2"),
        ({"output_dir": "o", "init_strategy": "magic"}, r"--init_strategy 'magic': expected one of"),
    ],
)
def test_a_mapping_refused_names_the_argument(mapping, message):
    with pytest.raises(ValueError, match=message):
        CommandParser(PRETRAINING_ARGUMENT_TYPES).parse_dict(mapping)


def test_a_required_argument_missing_from_a_mapping_is_named():
    from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
    from bioptimus_hf.vocabulary.init_config import StartModelArguments

    with pytest.raises(ValueError, match="the following arguments are required: --model_name_or_path, --output_dir"):
        CommandParser((StartModelArguments, EmbeddingInitArguments)).parse_dict({"seed": 3})
