"""qik-find: the Rust and Python backends agree exactly on all of Unicode and on every kind of gzip file.

* The sentence splitter's character classes are generated into both backends
  (``rust/src/generated/sentence_classes.rs``, ``bioptimus_hf/vocabulary/_sentence_classes.py``): the two
  tables hold the same code points, and both splitters agree on every code point.
* The Rust BERT tokenizer equals the Hugging Face ``tokenizers`` library installed here (the reference) on
  every code point, alone and in runs of neighbours, on every pair of combining marks and on precomposed
  characters followed by combining marks, for cased and uncased normaliser settings: normalised text, token
  ids and offsets.
* gzip: trailing zero padding, 0-byte files, zero padding between members are read, truncated or corrupt
  files refused with an error that names the file, the same way by both backends.
* Byte-level BPE (GPT-2, RoBERTa), the second family the Rust backend serves: its pre-tokenizer on every code
  point, ids and offsets on all of Unicode and on a seeded Unicode fuzz in seven configurations (prefix space,
  offset trimming, lstrip/rstrip/normalized added tokens, both merges formats, ignore_merges), and the corpus
  scan against contexts derived from the reference's own encoding.

Long strings holding thousands of code points go through both sides at once, so this takes seconds.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from pathlib import Path

import pytest

from bioptimus_hf.utils.corpus_reader import CorpusFileError
from bioptimus_hf.utils.prepared_corpus import PreparedCorpusError
from bioptimus_hf.vocabulary import _sentence_classes
from bioptimus_hf.vocabulary.qikfind import (
    Context,
    FindOptions,
    find_contexts,
    rust_available,
    sample_priority,
    split_sentences,
)


ROOT = Path(__file__).resolve().parents[1]
CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
# Without the extension only the Rust side is skipped: the Python backend's agreement with the reference
# (tokenizers) is tested either way.
needs_rust = pytest.mark.skipif(
    not rust_available(),
    reason="Rust side skipped: the bioptimus_hf._qikfind extension is not built (no cargo); the Python side still runs",
)
BACKENDS = ["python", pytest.param("rust", marks=needs_rust)]


# ------------------------------------------------------------------------------------- sentence splitting


def _rust_code_points(text: str, name: str) -> set[int]:
    body = re.search(rf"pub static {name}: &\[\(u32, u32\)\] = &\[(.*?)\];", text, re.S).group(1)
    ranges = re.findall(r"\(0x([0-9A-F]+), 0x([0-9A-F]+)\)", body)
    return {c for a, b in ranges for c in range(int(a, 16), int(b, 16) + 1)}


def _python_code_points(runs) -> set[int]:
    return {c for first, last, step in runs for c in range(first, last + 1, step)}


def test_sentence_class_tables_hold_the_same_code_points_in_both_backends():
    rust = (ROOT / "rust" / "src" / "generated" / "sentence_classes.rs").read_text(encoding="utf-8")
    assert f'UNICODE_VERSION: &str = "{_sentence_classes.UNICODE_VERSION}"' in rust
    assert _rust_code_points(rust, "WHITE_SPACE") == _python_code_points(_sentence_classes.WHITE_SPACE)
    uppercase = _python_code_points(_sentence_classes.UPPERCASE)
    assert _rust_code_points(rust, "UPPERCASE") == uppercase
    assert len(uppercase) > 1900  # not an empty parse
    # The classes do not move with the Python running the tests: U+1C89 (CYRILLIC CAPITAL LETTER TJE)
    # is Uppercase since Unicode 16, not in the pinned Unicode 14.0 table, so it starts no sentence.
    assert split_sentences("a. \u1c89b")[0] == ["a. \u1c89b"]
    assert split_sentences("a. \u0100b")[0] == ["a.", "\u0100b"]


def _splitter_lines(block: list[int]) -> list[tuple[str, int]]:
    chars = [chr(c) for c in block]
    lines = [
        ("".join(f"x. {c}y " for c in chars), 1000),  # uppercase (or digit) after ". " starts a sentence
        ("".join(f"x.{c}Y " for c in chars), 1000),  # whitespace between "." and the next sentence
    ]
    # stripping, and chunking at whitespace (short lines: chunking is quadratic in the Python splitter)
    lines += [("".join(f"{c}ab{c}" for c in chars[i : i + 64]), 3) for i in range(0, len(chars), 64)]
    return lines


@needs_rust
def test_sentence_splitters_agree_on_every_code_point():
    from bioptimus_hf import _qikfind

    mismatches = []
    for start in range(0, len(CODE_POINTS), 2048):
        block = CODE_POINTS[start : start + 2048]
        for line, max_chars in _splitter_lines(block):
            if _qikfind.split_sentences(line, max_chars) != split_sentences(line, max_chars):
                mismatches.append((ascii(line[:12]), max_chars))
    assert not mismatches, mismatches[:5]


@needs_rust
def test_sentence_splitters_agree_on_unicode_version_dependent_examples():
    from bioptimus_hf import _qikfind

    # U+1C89 became Uppercase in Unicode 16 (Rust's std knows it, Python 3.11 does not); U+A7C0 in 14.
    for line in ["a. \u1c89b", "a. \ua7c0b", "a. \U00016ea0b", "a.\u180eB c", "a. \u2160b"]:
        assert _qikfind.split_sentences(line, 1000) == split_sentences(line, 1000), ascii(line)


# ----------------------------------------------------------------------------------- BERT normalisation

SETTINGS = {
    "uncased": dict(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True),
    "cased": dict(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=False),
    "lowercase_keep_accents": dict(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=True),
    "raw_strip_accents": dict(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False),
}


def _tokenizer_json(setting: dict, vocab: dict[str, int]) -> str:
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": {"type": "BertNormalizer", **setting},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": None,
            "decoder": None,
            "model": {
                "type": "WordPiece",
                "unk_token": "[UNK]",
                "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 1000,
                "vocab": vocab,
            },
        }
    )


def _non_starters() -> list[int]:
    """Combining marks as the reference reorders them (only used to choose test strings and vocabulary)."""
    from tokenizers import normalizers

    nfd = normalizers.NFD().normalize_str
    candidates = [c for c in CODE_POINTS if unicodedata.combining(chr(c)) or unicodedata.category(chr(c)) == "Mn"]
    # X is a non-starter for the reference iff it moves across U+0334 (class 1) or U+0301 (class 230).
    texts = [f"{chr(c)}\u0334 \u0301{chr(c)}" for c in candidates]
    out = nfd(" ".join(texts)).split(" ")
    return [c for i, c in enumerate(candidates) if out[2 * i] != texts[i][:2] or out[2 * i + 1] != texts[i][3:]]


@pytest.fixture(scope="module")
def unicode_texts():
    """Three families of words: every code point in runs of 16 neighbours; every ordered pair of
    combining marks after a letter; every precomposed character with a canonical decomposition followed
    by a mark of each combining class. And the vocabulary: [UNK], ASCII letters and digits, every
    character that lowercasing or NFD makes of another one, every combining mark, each also as a ##
    piece. Tokens then show where each of these characters went; other words are [UNK] with the word's
    offsets (their text is compared as normalised text)."""
    from tokenizers import normalizers

    runs = ["".join(map(chr, CODE_POINTS[i : i + 16])) for i in range(0, len(CODE_POINTS), 16)]
    marks = _non_starters()
    assert len(marks) > 700
    pairs = [f"x{chr(a)}{chr(b)}" for a in marks for b in marks]
    one_per_class = list({unicodedata.combining(chr(m)): m for m in marks}.values())
    decomposable = [
        c
        for c in CODE_POINTS
        if unicodedata.decomposition(chr(c))
        and not unicodedata.decomposition(chr(c)).startswith("<")
        and not 0xAC00 <= c <= 0xD7A3
    ]
    precomposed = [f"{chr(c)}{chr(m)}" for c in decomposable for m in one_per_class]

    chars = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") | set(map(chr, marks))
    code_points = [c for c in CODE_POINTS if c != ord("#")]
    for normalizer in (
        normalizers.Lowercase(),
        normalizers.NFD(),
        normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()]),
    ):
        out = normalizer.normalize_str("#".join(map(chr, code_points))).split("#")
        assert len(out) == len(code_points)
        chars.update(*(o for c, o in zip(code_points, out) if o != chr(c)))
    vocab = {"[UNK]": 0}
    for c in sorted(chars - set(" \t\n\r")):
        vocab[c] = len(vocab)
        vocab["##" + c] = len(vocab)
    return {"words": {"runs": runs, "mark_pairs": pairs, "precomposed_marks": precomposed}, "vocab": vocab}


def _families(setting: str) -> list[str]:
    # Canonical reordering happens only when accents are stripped; marks have no case, and clean text and
    # CJK spacing do not touch them: the pairs under one setting with NFD test all there is to test.
    return ["runs", "precomposed_marks"] + (["mark_pairs"] if setting == "uncased" else [])


def _texts(words: list[str], per_text: int) -> list[str]:
    return [" ".join(words[i : i + per_text]) for i in range(0, len(words), per_text)]


def _target_sets(vocab: dict[str, int]) -> dict[str, list[int]]:
    """Targets for the corpus-scan search: every token but [UNK] (which would switch the prefilter off),
    and the non-ASCII ones, so that the prefilter must find them in the normalised text."""
    non_ascii = [i for t, i in vocab.items() if t != "[UNK]" and not t.removeprefix("##").isascii()]
    return {"all": [i for t, i in vocab.items() if t != "[UNK]"], "non_ascii": non_ascii}


@pytest.fixture(scope="module")
def reference_encodings(unicode_texts):
    """{setting: (tokenizer_json, {family: (texts, [[(id, start, end)]])})} from the reference."""
    from tokenizers import Tokenizer

    cache = {}

    def get(setting):
        if setting not in cache:
            tokenizer_json = _tokenizer_json(SETTINGS[setting], unicode_texts["vocab"])
            reference = Tokenizer.from_str(tokenizer_json)
            families = {}
            for family in _families(setting):
                texts = _texts(unicode_texts["words"][family], 256 if family == "runs" else 4096)
                encodings = reference.encode_batch(texts, add_special_tokens=False)
                families[family] = (texts, [list(zip(e.ids, *zip(*e.offsets))) for e in encodings])
            cache[setting] = (tokenizer_json, families)
        return cache[setting]

    return get


def _first_difference(family, text, expected, got):
    first = next((k for k, (g, e) in enumerate(zip(got, expected)) if g != e), min(len(got), len(expected)))
    e = expected[first] if first < len(expected) else None
    g = got[first] if first < len(got) else None
    where = e or g
    return family, ascii(text[max(0, where[1] - 3) : where[2] + 3]), e, g


@needs_rust
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_rust_tokenizer_matches_tokenizers_on_all_of_unicode(setting, unicode_texts, reference_encodings):
    """Token ids, offsets and normalised text of the Rust tokenizer; and the target tokens that the
    corpus scan's search (prefilter, ASCII fast path, word cache) finds, for two sets of targets."""
    from tokenizers import Tokenizer

    from bioptimus_hf import _qikfind

    tokenizer_json, families = reference_encodings(setting)
    reference = Tokenizer.from_str(tokenizer_json)
    rust = _qikfind.WordPieceTokenizer(tokenizer_json)
    target_sets = _target_sets(unicode_texts["vocab"])
    mismatches = []
    for family, (texts, expected_tokens) in families.items():
        for text, expected in zip(texts, expected_tokens):
            got = [tuple(t) for t in rust.tokenize(text)]
            if got != expected:
                mismatches.append(_first_difference(family, text, expected, got))
            if rust.normalize(text) != reference.normalizer.normalize_str(text):
                mismatches.append((family, "normalized text differs", ascii(text[:40])))
        for name, targets in target_sets.items():
            wanted = set(targets)
            found = rust.find_targets(texts, targets)
            for text, expected, got in zip(texts, expected_tokens, found):
                expected = [t for t in expected if t[0] in wanted]
                if [tuple(t) for t in got] != expected:
                    mismatches.append(("search", name, *_first_difference(family, text, expected, got)))
    assert not mismatches, f"{len(mismatches)} strings differ, first: {mismatches[:5]}"


KNOWN_DIFFERENCES = {
    "dropped_mark_pair": "a\u0301\u0316",  # canonical reordering of two marks (230, 220), both dropped
    "kept_after_dropped": "a\U0001d165\u0f71",  # a kept mark (Mc, 216) moves after a dropped one (Mn, 129)
    "kept_marks_swap": "x\U0001d16d\U0001d165 y",  # two kept marks (226, 216) swap
    "unicode_13_decomposition": "x\U00011938y",  # decomposes since Unicode 13, not in the reference's tables
    "precomposed_and_marks": "\u1e69\u0323\u0307 e\u0301\u0323",  # marks reordered across precomposed chars
    "marks_only_decompositions": "\u0f73\u0f71\u0f72 \u0344\u0301",
    "case_mappings": "\u01c4 \u0130stanbul \U00016ea0\u1c89",  # recent case mappings included
}


@needs_rust
@pytest.mark.parametrize("case", list(KNOWN_DIFFERENCES))
@pytest.mark.parametrize("setting", ["uncased", "cased"])
def test_rust_tokenizer_matches_tokenizers_on_known_differences(setting, case):
    from tokenizers import Tokenizer

    from bioptimus_hf import _qikfind

    text = KNOWN_DIFFERENCES[case]
    config = SETTINGS[setting]
    reference = Tokenizer.from_str(_tokenizer_json(config, {"[UNK]": 0}))
    normalized = reference.normalizer.normalize_str(text)
    vocab = {"[UNK]": 0}
    for c in sorted(set(normalized + text) - set(" ")):
        vocab[c] = len(vocab)
        vocab["##" + c] = len(vocab)
    tokenizer_json = _tokenizer_json(config, vocab)
    reference = Tokenizer.from_str(tokenizer_json)
    encoding = reference.encode(text, add_special_tokens=False)
    expected = [(i, a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]
    assert [tuple(t) for t in _qikfind.WordPieceTokenizer(tokenizer_json).tokenize(text)] == expected


# ---------------------------------------------------------------------------- the corpus scan, end to end

CORPUS_SAMPLE = 5  # contexts kept per target: every target appears in more sentences than this


@pytest.fixture(scope="module")
def unicode_corpus(unicode_texts, tmp_path_factory):
    """The word families as a corpus of short lines (16 words a line; no newline characters inside), the
    targets (non-ASCII tokens and a few ASCII ones), and per setting the reference's contexts: each line
    split into sentences, each sentence tokenized by the reference, the first occurrence of each target
    kept, and per target the CORPUS_SAMPLE sentences of smallest priority (the bottom-k definition, by
    sorting)."""
    from tokenizers import Tokenizer

    vocab = unicode_texts["vocab"]
    targets = _target_sets(vocab)["non_ascii"] + [vocab["a"], vocab["##a"], vocab["x"]]
    paths = {}
    for family, words in unicode_texts["words"].items():
        path = tmp_path_factory.mktemp("unicode_corpus") / f"{family}.txt"
        words = [w.replace("\n", "") for w in words]
        path.write_text("\n".join(_texts(words, 16)) + "\n", encoding="utf-8")
        paths[family] = path
    cache = {}

    def expected(setting):
        if setting not in cache:
            reference = Tokenizer.from_str(_tokenizer_json(SETTINGS[setting], vocab))
            sentences = []
            for family in _families(setting):
                for line in paths[family].read_bytes().decode("utf-8").split("\n")[:-1]:
                    sentences.extend(split_sentences(line)[0])
            occurrences = {t: [] for t in targets}
            encodings = reference.encode_batch(sentences, add_special_tokens=False)
            for index, (sentence, encoding) in enumerate(zip(sentences, encodings)):
                seen = set()
                for token, (start, end) in zip(encoding.ids, encoding.offsets):
                    if token in occurrences and token not in seen:
                        seen.add(token)
                        occurrences[token].append(
                            (sample_priority(0, token, index), index, Context(sentence, start, end, index))
                        )
            contexts = {
                t: [c for _, _, c in sorted(sorted(found)[:CORPUS_SAMPLE], key=lambda o: o[1])]
                for t, found in occurrences.items()
            }
            cache[setting] = (contexts, len(sentences))
        return cache[setting]

    return {"paths": paths, "targets": targets, "vocab": vocab, "expected": expected}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("setting", ["uncased", "cased"])
def test_corpus_scan_matches_tokenizers_on_all_of_unicode(setting, backend, unicode_corpus):
    """Both backends' find_contexts over the Unicode corpus equal the reference's contexts: sentences,
    code point spans, sentence indices and samples."""
    from tokenizers import Tokenizer

    tokenizer_json = _tokenizer_json(SETTINGS[setting], unicode_corpus["vocab"])
    paths = [unicode_corpus["paths"][family] for family in _families(setting)]
    expected, n_sentences = unicode_corpus["expected"](setting)
    assert sum(map(len, expected.values())) > 1000  # not a vacuous comparison
    contexts, stats = find_contexts(
        paths,
        Tokenizer.from_str(tokenizer_json),
        unicode_corpus["targets"],
        FindOptions(CORPUS_SAMPLE),
        backend=backend,
        progress=False,
        return_stats=True,
    )
    assert stats.backend == backend and stats.sentences == n_sentences
    differing = [t for t in expected if contexts[t] != expected[t]]
    assert not differing, [(t, contexts[t][:1], expected[t][:1]) for t in differing[:3]]


# ------------------------------------------------------------------------------------------------- gzip

TEXT = b"The patients were fine.\nMore patients here. Patients again\n"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gz_tok")
    (directory / "vocab.txt").write_text(
        "\n".join(
            [
                "[PAD]",
                "[UNK]",
                "[CLS]",
                "[SEP]",
                "[MASK]",
                "the",
                "patients",
                "were",
                "fine",
                ".",
                "more",
                "here",
                "again",
            ]
        )
        + "\n"
    )
    return directory


def _scan(path, tokenizer_dir, backend):
    return find_contexts(
        [path], tokenizer_dir, [6], FindOptions(10), backend=backend, progress=False, return_stats=True
    )


def _member(data: bytes = TEXT) -> bytes:
    return gzip.compress(data, mtime=0)


GOOD_GZIP = {
    "zero_padding": (_member() + b"\0" * 1000, 2),  # tape-block padding (what gzip -d and Python accept)
    "empty_file": (b"", 0),  # a 0-byte .gz is an empty file
    "padding_between_members": (_member() + b"\0\0" + _member(), 4),
    "two_members": (_member() + _member(b"Patients once more.\n"), 3),
    "empty_member": (_member(b"") + _member(), 2),
}
BAD_GZIP = {
    "truncated": _member()[:-12],  # cut inside the deflate stream
    "truncated_trailer": _member()[:-3],  # cut inside the CRC/size trailer
    "header_only": _member()[:6],
    "garbage_after_member": _member() + b"garbage",
    "padding_then_garbage": _member() + b"\0\0\0x",
    "zeros_only": b"\0" * 20,
    "bad_crc": _member()[:-8] + b"\0\0\0\0" + _member()[-4:],
    "not_gzip": TEXT,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(GOOD_GZIP))
def test_gzip_files_that_both_backends_read(tmp_path, tokenizer_dir, backend, case):
    data, lines = GOOD_GZIP[case]
    path = tmp_path / f"{case}.txt.gz"
    path.write_bytes(data)
    contexts, stats = _scan(path, tokenizer_dir, backend)
    assert stats.lines == lines and stats.files == 1
    assert len(contexts[6]) == (0 if lines == 0 else {2: 3, 3: 4, 4: 6}[lines])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(BAD_GZIP))
def test_bad_gzip_files_are_refused_by_both_backends_naming_the_file(tmp_path, tokenizer_dir, backend, case):
    path = tmp_path / f"{case}.txt.gz"
    path.write_bytes(BAD_GZIP[case])
    with pytest.raises(CorpusFileError, match=re.escape(str(path))):
        _scan(path, tokenizer_dir, backend)


@needs_rust
def test_unreadable_corpus_file_names_the_file(tmp_path, tokenizer_dir):
    missing = tmp_path / "missing.txt"
    directory = tmp_path / "a_directory.txt"  # a directory is read as a prepared corpus: it has no manifest
    directory.mkdir()
    for backend in ["python", "rust"]:
        with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
            _scan(missing, tokenizer_dir, backend)
        with pytest.raises(PreparedCorpusError, match=re.escape(str(directory)) + ".*without manifest.json"):
            _scan(directory, tokenizer_dir, backend)


# ------------------------------------------------------------------------------------------ byte-level BPE
#
# The second family the Rust backend serves (tokenizers trained here on corpus lines: tests/helpers/qikfind.py).
# The reference is the `tokenizers` library's own encoding: ids and character offsets, trimming included.


@pytest.fixture(scope="module")
def bpe_tokenizers():
    """{config: tokenizer.json text}: byte-level BPE tokenizers trained on 2,000 corpus lines."""
    from helpers import corpus_lines
    from helpers.qikfind import BPE_CONFIGS, train_byte_level_bpe

    lines = corpus_lines(2000)
    return {config: train_byte_level_bpe(lines, config) for config in BPE_CONFIGS}


# Planes 4 to 13 are unassigned and planes 15-16 private use: all one class of the pattern (the pre-tokenizer
# test checks each of them), their bytes never merged. Tokenization takes every 97th of them.
BPE_CODE_POINTS = [c for c in CODE_POINTS if c < 0x40000 or 0xE0000 <= c < 0xE0200 or c % 97 == 0]


def _bpe_runs(code_points=CODE_POINTS, per_text=256) -> list[str]:
    """Code points in runs of 16 neighbours; ``per_text`` runs a text."""
    runs = ["".join(map(chr, code_points[i : i + 16])) for i in range(0, len(code_points), 16)]
    return _texts(runs, per_text)


def _bpe_fuzz(count: int, seed: int) -> list[str]:
    """Seeded random strings mixing scripts, combining marks, emoji (ZWJ sequences too), controls, whitespace runs,
    CJK, contractions and special tokens with spaces around them."""
    import random

    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "  \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000",
        ".,;:!?-()[]{}'\"/\\@#$%^&*_+=<>|~`§¶•…—–“”«»",
        ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'x", "''"],
        "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿİıŁłŒœßẞǅΣσςΑΒΓάέΐАБВабвЁёאבגابت",
        "中文字符漢字㐀豈가나다あいうアイウ\U00020000\U0002a700",
        "\u0301\u0308\u0327\u0903\u20dd\u0f71\U0001d165\u200b\u200c\u200d\ufeff\x00\x01\x1f\x7f\u00ad",
        "ﬁﬂ①½²ⅫＡＢＣａｂｃ٣٤۵\U00016ea0\u1c89\U000105c0",
        ["😀", "🧬", "🔬", "👨‍👩‍👧", "🏳️‍🌈", "\U000e0001", "\U0010fffd", "\U000f0000"],
        ["ĠĊ", "Ġ", "Ã©", "\ufffd"],
        [
            "<s>",
            "</s>",
            "<mask>",
            " <mask>",
            "<mask>  ",
            "<unk>",
            "protein",
            " protein ",
            "cell line",
            "IL-2 ",
            "<pad>",
        ],
    ]
    texts = []
    for _ in range(count):
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, 48))))
    return texts


def _bpe_targets(tokenizer_json: str) -> dict[str, list[int]]:
    """Targets for the search: every id; and the non-ASCII and added ones (the prefilter must find them)."""
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(tokenizer_json)
    vocab = reference.get_vocab(with_added_tokens=True)
    added = {t.content for t in reference.get_added_tokens_decoder().values()}
    byte_level_ascii = set(map(chr, range(0x21, 0x7F)))
    rare = [i for t, i in vocab.items() if t in added or not set(t) <= byte_level_ascii | {"Ġ"}]
    return {"all": sorted(vocab.values()), "rare": sorted(rare)}


def _compare_bpe(tokenizer_json: str, texts: list[str], family: str, target_sets=("all", "rare")) -> list:
    """Rust tokenize and target search vs the reference's encoding of each text: the differences."""
    from tokenizers import Tokenizer

    from bioptimus_hf import _qikfind

    reference = Tokenizer.from_str(tokenizer_json)
    rust = _qikfind.Tokenizer(tokenizer_json)
    assert rust.family == "byte-level BPE"
    encodings = reference.encode_batch(texts, add_special_tokens=False)
    expected_tokens = [list(zip(e.ids, *zip(*e.offsets))) if e.ids else [] for e in encodings]
    mismatches = []
    for text, expected in zip(texts, expected_tokens):
        got = [tuple(t) for t in rust.tokenize(text)]
        if got != expected:
            mismatches.append(_first_difference(family, text, expected, got))
    for name, targets in _bpe_targets(tokenizer_json).items():
        if name not in target_sets:
            continue
        wanted = set(targets)
        for text, expected, got in zip(texts, expected_tokens, rust.find_targets(texts, targets)):
            expected = [t for t in expected if t[0] in wanted]
            if [tuple(t) for t in got] != expected:
                mismatches.append(("search", name, *_first_difference(family, text, expected, got)))
    return mismatches


@needs_rust
@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_byte_level_pre_tokenizer_matches_tokenizers_on_every_code_point(add_prefix_space, bpe_tokenizers):
    """The GPT-2 pattern's classes (generated/byte_level_classes.rs) and its scanner: every code point among
    neighbours, each alone between letters, digits and punctuation, and every whitespace character in runs."""
    from tokenizers import pre_tokenizers

    from bioptimus_hf import _qikfind

    config = "prefix_space" if add_prefix_space else "gpt2"
    rust = _qikfind.Tokenizer(bpe_tokenizers[config])
    reference = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    whitespace = [chr(c) for c in _sentence_classes_white_space()]
    texts = _bpe_runs()
    # Each code point once more, after a letter, a digit, punctuation, a space or an apostrophe.
    neighbours = ["a", "1", "!", " ", "'", "a ", "1 ", "! "]
    texts += [
        "".join(f"{neighbours[c % len(neighbours)]}{chr(c)}" for c in CODE_POINTS[i : i + 4096])
        for i in range(0, len(CODE_POINTS), 4096)
    ]
    texts += [
        f"{a}{w * n}{b}" for w in whitespace for n in (1, 2, 3) for a in ("", "x", " ") for b in ("", "y", " ", "\n")
    ]
    mismatches = []
    for text in texts:
        expected = [offsets for _, offsets in reference.pre_tokenize_str(text)]
        got = [tuple(o) for o in rust.pre_tokenize(text)]
        if got != expected:
            k = next((k for k, (g, e) in enumerate(zip(got, expected)) if g != e), min(len(got), len(expected)))
            mismatches.append(
                (
                    ascii(text[max(0, (expected + got)[k][0] - 3) : (expected + got)[k][1] + 3]),
                    expected[k : k + 2],
                    got[k : k + 2],
                )
            )
    assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[:3]}"


def _sentence_classes_white_space() -> list[int]:
    return sorted(_python_code_points(_sentence_classes.WHITE_SPACE))


@needs_rust
def test_byte_level_bpe_matches_tokenizers_on_all_of_unicode(bpe_tokenizers):
    """Ids and offsets of every code point (bytes merged where the vocabulary has merges for them), and the
    targets the corpus scan's search finds, with a prepended space and the trimming that goes with it (the
    other configurations: the fuzz below)."""
    texts = _bpe_runs(BPE_CODE_POINTS)
    mismatches = _compare_bpe(bpe_tokenizers["roberta_wrapped"], texts, "runs", target_sets=("rare",))
    assert not mismatches, f"{len(mismatches)} strings differ, first: {mismatches[:5]}"


@needs_rust
@pytest.mark.parametrize(
    "config", ["gpt2", "roberta", "roberta_wrapped", "prefix_space", "legacy_merges", "added_words", "ignore_merges"]
)
def test_byte_level_bpe_matches_tokenizers_on_a_unicode_fuzz(config, bpe_tokenizers):
    """4,000 seeded random strings (scripts, marks, emoji, controls, whitespace runs, CJK, contractions, added
    tokens with spaces), and real corpus lines."""
    from helpers import corpus_lines

    texts = _bpe_fuzz(4000, seed=17) + corpus_lines(300, start=5000)
    mismatches = _compare_bpe(bpe_tokenizers[config], texts, "fuzz")
    assert not mismatches, f"{len(mismatches)} strings differ, first: {mismatches[:5]}"


def test_byte_level_bpe_configurations_are_what_they_claim(bpe_tokenizers):
    """The fixtures exercise what they are named after (so that a parity test above cannot pass vacuously)."""
    from tokenizers import Tokenizer

    parts = {c: json.loads(t) for c, t in bpe_tokenizers.items()}
    assert isinstance(parts["gpt2"]["model"]["merges"][0], list)
    assert parts["legacy_merges"]["model"]["merges"][0].startswith("#version")
    assert parts["roberta"]["post_processor"]["type"] == "RobertaProcessing"
    assert [t["lstrip"] for t in parts["roberta"]["added_tokens"] if t["content"] == "<mask>"] == [True]
    assert parts["roberta_wrapped"]["pre_tokenizer"]["add_prefix_space"] is True
    assert parts["roberta_wrapped"]["post_processor"]["add_prefix_space"] is False
    assert parts["ignore_merges"]["model"]["ignore_merges"] is True
    assert any(t["normalized"] and t["lstrip"] for t in parts["added_words"]["added_tokens"])
    # Merges join the bytes of non-ASCII characters; offsets get trimmed.
    gpt2 = Tokenizer.from_str(bpe_tokenizers["gpt2"])
    assert "Ã©" in gpt2.get_vocab() and len(gpt2.encode("é", add_special_tokens=False).ids) == 1
    wrapped = Tokenizer.from_str(bpe_tokenizers["roberta_wrapped"])
    assert wrapped.encode("Cells and cells", add_special_tokens=False).offsets[0][0] == 1  # tokenizers' own trim


@pytest.fixture(scope="module")
def bpe_corpus(tmp_path_factory, bpe_tokenizers):
    """The Unicode runs and the fuzz as a corpus of lines (no line break inside a line), and per configuration
    the targets and the contexts derived from the reference's own encoding of every sentence (the bottom-k
    definition, by sorting)."""
    from tokenizers import Tokenizer

    path = tmp_path_factory.mktemp("bpe_corpus") / "unicode.txt"
    lines = _bpe_runs(BPE_CODE_POINTS, per_text=4) + _bpe_fuzz(3000, seed=23)
    lines = [re.sub(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", " ", line) for line in lines]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sentences = [sentence for line in lines for sentence in split_sentences(line)[0]]
    cache = {}

    def expected(config):
        if config not in cache:
            reference = Tokenizer.from_str(bpe_tokenizers[config])
            targets = _bpe_targets(bpe_tokenizers[config])["rare"]
            occurrences = {t: [] for t in targets}
            encodings = reference.encode_batch(sentences, add_special_tokens=False)
            for index, (sentence, encoding) in enumerate(zip(sentences, encodings)):
                seen = set()
                for token, (start, end) in zip(encoding.ids, encoding.offsets):
                    if token in occurrences and token not in seen:
                        seen.add(token)
                        occurrences[token].append(
                            (sample_priority(3, token, index), index, Context(sentence, start, end, index))
                        )
            contexts = {
                t: [c for _, _, c in sorted(sorted(found)[:CORPUS_SAMPLE], key=lambda o: o[1])]
                for t, found in occurrences.items()
            }
            cache[config] = (reference, targets, contexts)
        return cache[config]

    return {"path": path, "sentences": len(sentences), "expected": expected}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("config", ["roberta", "roberta_wrapped"])
def test_byte_level_bpe_corpus_scan_matches_tokenizers(config, backend, bpe_corpus):
    """Both backends' find_contexts over the Unicode corpus equal the contexts derived from the reference's own
    encoding: sentences, code point spans (trimmed as the reference trims them), indices and samples."""
    reference, targets, expected = bpe_corpus["expected"](config)
    assert sum(map(len, expected.values())) > 500  # not a vacuous comparison
    contexts, stats = find_contexts(
        [bpe_corpus["path"]],
        reference,
        targets,
        FindOptions(CORPUS_SAMPLE, seed=3),
        backend=backend,
        progress=False,
        return_stats=True,
    )
    assert stats.backend == backend and stats.sentences == bpe_corpus["sentences"]
    differing = [t for t in expected if contexts[t] != expected[t]]
    assert not differing, [(reference.id_to_token(t), contexts[t][:1], expected[t][:1]) for t in differing[:3]]
