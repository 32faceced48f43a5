"""The initialisation's and qik-find's progress bars: drawn on the main process only, as the Trainer draws its own,
and not at all with --disable_tqdm or with Hugging Face's progress bars switched off."""

import importlib

import pytest
from huggingface_hub.utils import disable_progress_bars

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.utils.distributed import is_main_process
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from bioptimus_hf.vocabulary.qikfind import find_contexts, rust_available
from helpers.embedding_init import NEW_VOCAB, contexts_of, init_args, make_base, make_tokenizer


MODES = ["main", "disabled", "other_rank", "hf_bars_off"]
# The module (huggingface_hub.utils.tqdm, as an attribute, is its tqdm class).
hub_tqdm = importlib.import_module("huggingface_hub.utils.tqdm")


@pytest.fixture
def hf_bars_on(monkeypatch):
    """Hugging Face's progress bars on, whatever this machine's HF_HUB_DISABLE_PROGRESS_BARS says."""
    monkeypatch.setattr(hub_tqdm, "HF_HUB_DISABLE_PROGRESS_BARS", None)
    monkeypatch.setattr(hub_tqdm, "progress_bar_states", {})


def fake_rank(monkeypatch, rank):
    """This process as rank ``rank`` of two, as torchrun starts it (before any process group exists)."""
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("LOCAL_RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", "2")


def drawing(monkeypatch, mode, call):
    """``call(progress)`` as ``mode`` asks: progress wanted on the main process, not wanted, or wanted elsewhere."""
    if mode == "other_rank":
        fake_rank(monkeypatch, 1)
    elif mode == "main":
        fake_rank(monkeypatch, 0)
    if mode == "hf_bars_off":
        with disable_progress_bars():
            return call(True)
    return call(mode != "disabled")


def test_main_process_is_rank_zero_before_and_without_a_process_group(monkeypatch):
    for name in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert is_main_process()
    fake_rank(monkeypatch, 0)
    assert is_main_process()
    fake_rank(monkeypatch, 1)
    assert not is_main_process()
    monkeypatch.delenv("RANK")
    assert not is_main_process()  # LOCAL_RANK alone (one node's launcher) says so too


@pytest.mark.parametrize("backend", ["python", "rust"])
@pytest.mark.parametrize("mode", MODES)
def test_qikfind_draws_its_bar_on_the_main_process_only_and_when_asked(
    monkeypatch, capsys, hf_bars_on, tmp_path, backend, mode
):
    if backend == "rust" and not rust_available():
        pytest.skip("the qik-find extension is not built")
    _, base_tok = make_base(tmp_path)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The kinase binds the receptor.\nThe cells of the thymus.\n", encoding="utf-8")
    target = base_tok.get_vocab()["kin"]
    found = drawing(
        monkeypatch,
        mode,
        lambda progress: find_contexts([corpus], base_tok, [target], backend=backend, progress=progress),
    )
    assert len(found[target]) == 1
    err = capsys.readouterr().err
    if mode == "main":
        assert f"qik-find ({backend})" in err and "100%" in err
    else:
        assert err == ""


@pytest.mark.parametrize(
    "strategy, description", [("contextualized", "Encoding contexts"), ("token_distillation", "Token distillation")]
)
@pytest.mark.parametrize("mode", MODES)
def test_initialisation_draws_its_bar_on_the_main_process_only_and_when_asked(
    monkeypatch, capsys, hf_bars_on, tmp_path, strategy, description, mode
):
    model, base_tok = make_base(tmp_path)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    capsys.readouterr()
    config = init_args(strategy, init_device="cpu", distill_steps=2)

    def initialise(progress):
        initializer = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, config, progress=progress)
        return initializer.initialize(contexts=contexts_of(new_tok))

    _, report = drawing(monkeypatch, mode, initialise)
    assert report["counts"][strategy] == 3
    err = capsys.readouterr().err
    if mode == "main":
        assert description in err and "100%" in err
    else:
        assert err == ""


@pytest.mark.parametrize("mode", MODES)
def test_init_command_disable_tqdm_and_other_ranks_draw_no_bar(monkeypatch, capsys, hf_bars_on, tmp_path, mode):
    model, base_tok = make_base(tmp_path)
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    base_tok.save_pretrained(base_dir)
    make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The kinase binds the receptor.\nInterleukin acts on the thymus.\n", encoding="utf-8")
    argv = [
        "--model_name_or_path",
        str(base_dir),
        "--tokenizer_name",
        str(tmp_path / "new_tok"),
        "--init_strategy",
        "contextualized",
        "--init_corpus_files",
        str(corpus),
        "--init_device",
        "cpu",
        "--output_dir",
        str(tmp_path / "out"),
    ]
    capsys.readouterr()
    report = drawing(
        monkeypatch,
        mode,
        lambda progress: bioptimus("init-embeddings", argv + ([] if progress else ["--disable_tqdm", "true"])),
    )
    assert report["counts"]["contextualized"] == 3
    err = capsys.readouterr().err
    ours = ("qik-find", "Encoding contexts")
    if mode == "main":
        assert all(bar in err for bar in ours), err
    else:
        assert not any(bar in err for bar in ours), err
