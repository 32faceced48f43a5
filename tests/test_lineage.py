"""Lineage from what was loaded (bioptimus_hf/releases/lineage.py): a Hub id only where ``from_pretrained`` resolved
one through the Hub cache, asked when the model is loaded, or where the user named it; a local path never counts.
The Hub cache is a fake one built here (huggingface_hub's layout), read offline."""

import shutil

import pytest
import torch
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM

from bioptimus_hf.releases.lineage import Lineage, base_model_hub_id, loaded_hub_id


COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "acme/tiny-bert"


def tiny_bert(seed=0):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    return BertForMaskedLM(config)


def fake_hub_cache(cache, repo_id=REPO, ref="main", seed=0):
    """``cache/models--org--name/{refs/<ref>, snapshots/<commit>/...}``, as huggingface_hub lays out a download."""
    folder = cache / f"models--{repo_id.replace('/', '--')}"
    tiny_bert(seed).save_pretrained(folder / "snapshots" / COMMIT)
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / ref).write_text(COMMIT)
    return cache


def test_a_relative_path_that_is_absent_is_not_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cache = fake_hub_cache(tmp_path / "cache")
    assert loaded_hub_id("out/v0.4", cache_dir=cache) is None  # shaped like org/name, yet never loaded from the Hub
    assert base_model_hub_id("out/v0.4", cache_dir=cache) is None
    assert Lineage.of("out/v0.4", cache_dir=cache) == Lineage(None, "v0.4")
    assert Lineage.of("out/v0.4").is_local and "`v0.4`; its Hub id was not given" in Lineage.of("out/v0.4").text()
    # Only the user can name one for it.
    assert Lineage.of("out/v0.4", "acme/bioptimus") == Lineage("acme/bioptimus", "acme/bioptimus")


def test_a_path_loaded_then_removed_is_not_a_hub_id(tmp_path, monkeypatch):
    """Recorded when loaded: a local directory named like a Hub id that the cache also holds is what
    ``from_pretrained`` reads, and the lineage says so even after the directory is gone."""
    monkeypatch.chdir(tmp_path)
    cache = fake_hub_cache(tmp_path / "cache", seed=1)
    tiny_bert(seed=2).save_pretrained(tmp_path / REPO)
    model = AutoModelForMaskedLM.from_pretrained(REPO, cache_dir=cache)
    local = BertForMaskedLM.from_pretrained(tmp_path / REPO)
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, local.bert.embeddings.word_embeddings.weight)
    lineage = Lineage.of_loaded(model, cache_dir=cache)
    assert lineage == Lineage(None, "tiny-bert")
    shutil.rmtree(tmp_path / "acme")
    assert lineage.hub_id is None
    # Without a cache entry, asking again after the removal still gives no Hub id.
    tiny_bert().save_pretrained(tmp_path / "out" / "v0.4")
    loaded = Lineage.of_loaded(AutoModelForMaskedLM.from_pretrained("out/v0.4"), cache_dir=cache)
    shutil.rmtree(tmp_path / "out")
    assert loaded == Lineage.of("out/v0.4", cache_dir=cache) == Lineage(None, "v0.4")


def test_an_id_loaded_from_the_hub_cache_is_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cache = fake_hub_cache(tmp_path / "cache")
    model = AutoModelForMaskedLM.from_pretrained(REPO, cache_dir=cache)  # offline: resolved from the cache
    assert Lineage.of_loaded(model, cache_dir=cache) == Lineage(REPO, REPO)
    assert base_model_hub_id(REPO, cache_dir=cache) == REPO
    assert loaded_hub_id(REPO, cache_dir=tmp_path / "empty-cache") is None  # another cache: not what was loaded
    assert loaded_hub_id("acme/never-loaded", cache_dir=cache) is None
    # A revision other than main is looked up at that revision.
    fake_hub_cache(cache, "acme/tagged", ref="v1")
    assert loaded_hub_id("acme/tagged", cache_dir=cache) is None
    assert loaded_hub_id("acme/tagged", cache_dir=cache, revision="v1") == "acme/tagged"


@pytest.mark.parametrize("name", [None, "", "/abs/path", "./m", "~/m", "a\\b", "org/name/extra"])
def test_what_is_no_hub_id_at_all_is_never_one(name, tmp_path):
    assert loaded_hub_id(name, cache_dir=tmp_path) is None
