"""Fixtures and hooks shared by the test files: a tiny WordPiece tokenizer trained on real corpus lines and a tiny
random BERT; ``make_corpus``, a corpus file of as many lines as a test asks; ``one_thread``; ``init_setup`` and
``tagging_model`` (tests/README.md). Plain functions the tests share live in ``tests/helpers/``, never here.

Precision is pinned, not hoped for: every test runs with ``auto`` resolving to float32 (the autouse
fixture ``pinned_precision`` sets ``BIOPTIMUS_DISABLE_BF16=1``, which subprocesses inherit), whatever
this CPU or GPU supports, except tests marked ``precision``: those take the path ``auto`` takes on this
machine, and ``scripts/test.sh`` runs them a second time with ``BIOPTIMUS_FORCE_BF16=1`` (the bf16
branch, emulated where not native). Tests marked ``gpu`` need CUDA and are skipped without it.
See tests/README.md.
"""

import logging
import os
from pathlib import Path

import pytest


os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bioptimus_hf.utils.hardware import DISABLE_BF16_ENV, FORCE_BF16_ENV
from helpers import corpus_lines, write_corpus


def pytest_configure(config):
    _share_cores_among_workers()
    config.addinivalue_line(
        "markers",
        "precision: takes the path `auto` precision takes on this machine (else float32 is pinned); "
        "scripts/test.sh runs these a second time with BIOPTIMUS_FORCE_BF16=1",
    )
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")
    config.addinivalue_line(
        "markers",
        "compile: runs torch.compile (inductor on CPU: tens of seconds per graph); part of the suite, "
        "deselect with -m 'not compile' for a quick loop",
    )


def _share_cores_among_workers():
    """Under pytest-xdist (``scripts/test.sh`` runs pass 1 with ``-n``), give each worker its share of the cores.

    Every worker's torch would otherwise start one thread per core: two workers on two cores would run four
    busy threads, and OpenMP's spinning threads slow each other down. The share goes to ``OMP_NUM_THREADS``
    too, so the scripts a test starts as subprocesses inherit it. Tests never depend on the thread count.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 2:
        return
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def pinned_precision(request, monkeypatch):
    """float32 for ``auto`` in every test not marked ``precision`` (see the module docstring)."""
    if request.node.get_closest_marker("precision") is None:
        monkeypatch.delenv(FORCE_BF16_ENV, raising=False)
        monkeypatch.setenv(DISABLE_BF16_ENV, "1")


@pytest.fixture(autouse=True)
def package_log_levels():
    """The package's logger levels as each test found them: a command run in-process with ``--log_level`` sets them
    for the process (as transformers' examples do), which would silence a later test's expected warning."""
    loggers = [logging.getLogger(name) for name in ("bioptimus_hf", "__main__")]
    states = [(logger.level, logger.propagate, logger.disabled) for logger in loggers]
    yield
    for logger, (level, propagate, disabled) in zip(loggers, states):
        logger.setLevel(level)
        logger.propagate, logger.disabled = propagate, disabled


@pytest.fixture
def make_corpus(tmp_path):
    """``make_corpus(lines=600, start=0, bad_byte=False)``: ``tmp_path/corpus.txt`` holding that many lines of
    the shared corpus (``helpers.write_corpus``); each test file asks for the data its tests were written for."""

    def make(lines: int = 600, start: int = 0, bad_byte: bool = False) -> Path:
        return write_corpus(tmp_path / "corpus.txt", lines, start, bad_byte)

    return make


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module of tiny matrices, where extra threads only add contention (NER modules ask
    for it with ``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def init_setup(tmp_path):
    """(tiny base BERT, its tokenizer, the new tokenizer) of the new-token initialisation tests."""
    from helpers.embedding_init import NEW_VOCAB, make_base, make_tokenizer

    model, base_tok = make_base(tmp_path)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    return model, base_tok, new_tok


@pytest.fixture(scope="module")
def tagging_model(tmp_path_factory):
    """A tiny random token classifier tagging plenty of entities (``helpers.ner.build_tiny_tagger``)."""
    from helpers.ner import build_tiny_tagger

    return build_tiny_tagger(str(tmp_path_factory.mktemp("tagger") / "model"))


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    out = tmp_path_factory.mktemp("tiny_tokenizer")
    trainer_tok = BertWordPieceTokenizer(lowercase=True)
    trainer_tok.train_from_iterator(corpus_lines(3000), vocab_size=600, min_frequency=2)
    trainer_tok.save_model(str(out))
    tokenizer = BertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=True, model_max_length=128)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_tokenizer):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tiny_tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=tiny_tokenizer.pad_token_id,
    )
    out = tmp_path_factory.mktemp("tiny_bert")
    BertForMaskedLM(config).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out
