"""The release record (bioptimus_hf.releases.record): what the callback writes is what the card shows."""

import json
from pathlib import Path

import pytest
from transformers import TrainingArguments

from bioptimus_hf.pretraining.callback import PhaseReleases, PhaseScheduleCallback
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.releases.checkpoint_facts import CheckpointFacts
from bioptimus_hf.releases.lineage import Lineage, base_model_hub_id, public_name
from bioptimus_hf.releases.naming import normalise_version, version_repo_id
from bioptimus_hf.releases.record import FORMAT_VERSION, ReleaseInfo, RunFacts, find_releases
from bioptimus_hf.releases.writer import write_release


class EightProcesses(TrainingArguments):
    """TrainingArguments as seen by each of 8 DDP processes (world_size comes from the launcher)."""

    @property
    def world_size(self):
        return 8


class _State:
    global_step = 0
    max_steps = 1000
    stateful_callbacks = {}
    is_world_process_zero = True


def test_card_of_a_multi_process_run_shows_per_device_and_effective_batch(tmp_path, tiny_tokenizer, tiny_model_dir):
    """8 processes x accumulation 2 x 32 per device: per device 32, effective 512, 1000 x 512 x 128 tokens."""
    from transformers import AutoModelForMaskedLM

    args = EightProcesses(
        str(tmp_path),
        per_device_train_batch_size=32,
        gradient_accumulation_steps=2,
        max_steps=1000,
        warmup_steps=0.06,
        learning_rate=1e-4,
        report_to="none",
    )
    collator = CurriculumDataCollator(tiny_tokenizer)
    facts = {"max_seq_length": 128, "base_model": "bert-base-uncased"}
    callback = PhaseScheduleCallback(collator, evaluate_at_phase_end=False, releases=PhaseReleases(run_info=facts))
    state = _State()
    callback.on_train_begin(args, state, None)
    state.global_step = 1000
    info = callback.release_info(3, 1000, None)
    release = write_release(
        tmp_path / "releases" / "v0.4", AutoModelForMaskedLM.from_pretrained(tiny_model_dir), tiny_tokenizer, info
    )
    stored = json.loads((release / "bioptimus_phase.json").read_text())
    assert stored["format_version"] == FORMAT_VERSION
    assert stored["run"]["per_device_train_batch_size"] == 32 and stored["run"]["world_size"] == 8
    assert stored["run"]["effective_train_batch_size"] == 512
    text = (release / "README.md").read_text()
    assert "| Batch size per device | 32 |" in text
    assert "| Effective batch size | 512 |" in text and "Effective batch size: 512 sequences" in text
    assert f"at most {1000 * 512 * 128:,}" in text  # steps x effective batch x sequence length
    # The warm-up that was used (a ratio in transformers 5's warmup_steps) and what it resolved to.
    assert "| Warm-up | 6% of the steps (60 steps) |" in text


def test_a_record_of_another_format_is_refused_with_a_message(tmp_path):
    (tmp_path / "bioptimus_phase.json").write_text(json.dumps({"version": "0.2", "format_version": 99}))
    with pytest.raises(ValueError, match=f"format version 99, this bioptimus-hf reads {FORMAT_VERSION}"):
        ReleaseInfo.load(tmp_path)


def test_record_round_trip_and_unknown_fields(tmp_path):
    run = RunFacts(
        base_model="bert-base-uncased",
        per_device_train_batch_size=8,
        gradient_accumulation_steps=4,
        world_size=2,
        max_seq_length=64,
        extra={"custom": [1, 2]},
    )
    info = ReleaseInfo(
        "0.3", 2, "word", 0.2, True, steps=5, start_step=5, end_step=10, global_step=10, heldout_mlm_loss=1.5, run=run
    )
    info.save(tmp_path)
    again = ReleaseInfo.load(tmp_path)
    assert again == info and again.run.effective_train_batch_size == 64 and again.training_tokens == 10 * 64 * 64
    assert again.heldout_perplexity == pytest.approx(4.4817, abs=1e-4)
    data = json.loads((tmp_path / "bioptimus_phase.json").read_text())
    data["surprise"] = 1
    (tmp_path / "bioptimus_phase.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"bioptimus_phase.json: unknown release field\(s\) \['surprise'\]"):
        ReleaseInfo.load(tmp_path)


def test_a_version_names_its_repository_with_or_without_its_v():
    assert version_repo_id("acme/b", "v0.3") == version_repo_id("acme/b", "0.3") == "acme/b-v0.3"


@pytest.mark.parametrize("version", ["../evil", "0.1/x", "", "v", ".hidden", "0..1", "a b"])
def test_unsafe_versions_are_refused(version):
    with pytest.raises(ValueError, match="is not allowed"):
        normalise_version(version)


def test_public_names_never_show_local_paths(tmp_path, monkeypatch):
    local = tmp_path / "models" / "minilm"
    local.mkdir(parents=True)
    assert public_name(str(local)) == "minilm"
    assert public_name("bert-base-uncased") == "bert-base-uncased" and public_name("org/model") == "org/model"
    assert base_model_hub_id(str(local)) is None
    # A local checkpoint's config names what it was loaded or fine-tuned from, not itself: never taken as its id.
    (local / "config.json").write_text(json.dumps({"_name_or_path": "nreimers/MiniLM-L6-H384-uncased"}))
    assert base_model_hub_id(str(local)) is None and Lineage.of(str(local)) == Lineage(None, "minilm")
    assert Lineage.of(str(local)).is_local and "`minilm`; its Hub id was not given" in Lineage.of(str(local)).text()
    given = Lineage.of(str(local), "sentence-transformers/all-MiniLM-L6-v2")
    assert given == Lineage("sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
    assert given.text() == "`sentence-transformers/all-MiniLM-L6-v2`" and not given.is_local
    # A Hub id is only what from_pretrained resolved through the Hub cache (tests/test_lineage.py): never the shape.
    assert base_model_hub_id("org/model", cache_dir=tmp_path) is None and base_model_hub_id(None) is None
    monkeypatch.chdir(tmp_path)
    assert base_model_hub_id("models") is None and base_model_hub_id("bert-base-uncased", cache_dir=tmp_path) is None
    assert Lineage.of(None) == Lineage() and Lineage().text() is None


def test_find_releases_ignores_work_in_progress(tmp_path):
    from bioptimus_hf.testing.tiny_releases import make_release

    releases = tmp_path / "releases"
    make_release(releases / "v0.1", 0)
    make_release(releases / "v0.2", 1)
    partial = make_release(releases / "v0.3.partial", 2)
    make_release(releases / "v0.2.old", 1)
    assert [p.name for p in find_releases(tmp_path)] == ["v0.1", "v0.2"]
    with pytest.raises(FileNotFoundError, match="unfinished release"):
        find_releases(partial)
    assert Path(partial).is_dir()


def test_checkpoint_facts_come_from_the_release_files(tmp_path):
    from bioptimus_hf.testing.tiny_releases import make_release

    facts = CheckpointFacts.read(make_release(tmp_path / "v0.1", 0))
    assert (facts.model_type, facts.architectures, facts.mask_token) == ("bert", ("BertForMaskedLM",), "[MASK]")
    assert (facts.family_name, facts.hidden_size, facts.num_hidden_layers, facts.vocab_size) == ("BERT", 16, 1, 15)


def test_checkpoint_facts_of_unknown_types_and_older_tokenizer_files(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "acmebert", "architectures": ["AcmeBertForMaskedLM"], "hidden_size": 8})
    )
    # An AddedToken as older save_pretrained wrote it, in special_tokens_map.json only.
    (tmp_path / "special_tokens_map.json").write_text(
        json.dumps({"mask_token": {"content": "<mask>", "lstrip": True}})
    )
    facts = CheckpointFacts.read(tmp_path)
    assert (facts.model_type, facts.family_name, facts.hidden_size, facts.mask_token) == (
        "acmebert",
        "AcmeBert",
        8,
        "<mask>",
    )
    empty = CheckpointFacts.read(tmp_path / "absent")
    assert (empty.model_type, empty.family_name, empty.mask_token, empty.architectures) == (None, None, None, ())
