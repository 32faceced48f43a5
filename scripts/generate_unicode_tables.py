#!/usr/bin/env python
"""Generate qik-find's Unicode tables, so that neither backend depends on its own Unicode version.

Two kinds of table, from two sources (docs/qikfind.md, "Unicode policy"):

``bert``
    ``rust/src/generated/bert_unicode.rs``: what the Hugging Face ``tokenizers`` library installed here
    (the reference the Rust BERT tokenizer must reproduce exactly) does with each code point, read off
    the library itself, never from a Unicode database:

    * White_Space as its ``char::is_whitespace`` sees it (BertNormalizer's clean text, BertPreTokenizer);
    * its lowercase mapping (``char::to_lowercase`` of the Rust that built the wheel);
    * its canonical decompositions (NFD of each code point alone, as ``unicode-normalization-alignments``
      gives it: older tables than Python's or Debian's crates, e.g. U+11938 does not decompose);
    * the order of canonical combining classes, found by asking NFD to reorder every pair of the
      non-starters: only the order matters to canonical reordering, so classes are stored as ranks.

    Regenerate after upgrading ``tokenizers`` when ``tests/test_qikfind_parity.py`` reports a difference.

``bytelevel``
    ``rust/src/generated/byte_level_classes.rs``: the character classes of the GPT-2 pattern that the
    ``ByteLevel`` pre-tokenizer of the ``tokenizers`` library installed here splits with
    (``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``, run by Oniguruma,
    whose Unicode version is neither Python's nor Rust's): letters, numbers and whitespace, read off the
    pre-tokenizer itself by asking it to split ``aXa``, ``1X1`` and ``!X!`` for every code point X.
    Regenerate after upgrading ``tokenizers`` when ``tests/test_qikfind_parity.py`` reports a difference.

``sentence``
    ``rust/src/generated/sentence_classes.rs`` and ``bioptimus_hf/vocabulary/_sentence_classes.py``: the
    sentence splitter's two character classes, the same code points in both backends ((first, last) ranges
    for Rust, (first, last, step) runs for Python): White_Space (fixed list, checked against this Python) and
    Uppercase (from this Python's ``str.isupper``, i.e. the Unicode ``Uppercase`` property of
    ``unicodedata.unidata_version``). They were generated once, with
    Unicode 14.0.0 (Python 3.11); regenerating them with another Unicode version changes where sentences
    split, hence sampled contexts, so the version must be confirmed with ``--unicode-version``.

Usage::

    python scripts/generate_unicode_tables.py bert
    python scripts/generate_unicode_tables.py bytelevel
    python scripts/generate_unicode_tables.py sentence --unicode-version 14.0.0
    python scripts/generate_unicode_tables.py check      # exit 1 if a committed table is stale
"""

from __future__ import annotations

import argparse
import functools
import sys
import unicodedata
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
BERT_RS = ROOT / "rust" / "src" / "generated" / "bert_unicode.rs"
BYTE_LEVEL_RS = ROOT / "rust" / "src" / "generated" / "byte_level_classes.rs"
SENTENCE_RS = ROOT / "rust" / "src" / "generated" / "sentence_classes.rs"
SENTENCE_PY = ROOT / "bioptimus_hf" / "vocabulary" / "_sentence_classes.py"

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]

# Unicode White_Space (PropList.txt; unchanged since Unicode 6.3, which removed U+180E).
WHITE_SPACE = [
    0x9,
    0xA,
    0xB,
    0xC,
    0xD,
    0x20,
    0x85,
    0xA0,
    0x1680,
    *range(0x2000, 0x200B),
    0x2028,
    0x2029,
    0x202F,
    0x205F,
    0x3000,
]

# Hangul syllables decompose algorithmically (Unicode 3.12); the Rust side computes them.
S_BASE, L_BASE, V_BASE, T_BASE, V_COUNT, T_COUNT, S_COUNT = 0xAC00, 0x1100, 0x1161, 0x11A7, 21, 28, 11172


def hangul_decomposition(c: int) -> str:
    index = c - S_BASE
    out = chr(L_BASE + index // (V_COUNT * T_COUNT)) + chr(V_BASE + index % (V_COUNT * T_COUNT) // T_COUNT)
    if index % T_COUNT:
        out += chr(T_BASE + index % T_COUNT)
    return out


def per_code_point(function, code_points=CODE_POINTS, separator=" ") -> dict[int, str]:
    """``function`` applied to each code point alone, in one call (separated by a starter that maps to itself)."""
    rest = [c for c in code_points if c != ord(separator)]
    out = function(separator.join(map(chr, rest))).split(separator)
    if len(out) != len(rest):
        raise RuntimeError(f"{function}: the separator {separator!r} did not survive")
    result = dict(zip(rest, out))
    if ord(separator) in code_points:
        result[ord(separator)] = function(separator)
    return result


def ranges(code_points) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for c in sorted(code_points):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [tuple(r) for r in out]


def stepped_runs(ranges_: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """The code points of ``ranges_`` as (first, last, step) runs, step 1 or 2 (Uppercase alternates with
    lowercase over much of Latin, Greek and Cyrillic): every step-th code point from first to last."""
    out: list[list[int]] = []
    for c in (c for first, last in ranges_ for c in range(first, last + 1)):
        if out and (c - out[-1][1] == out[-1][2] or (out[-1][0] == out[-1][1] and c - out[-1][1] == 2)):
            out[-1][1], out[-1][2] = c, c - out[-1][1]
        else:
            out.append([c, c, 1])
    return [tuple(r) for r in out]


# ------------------------------------------------------------------------------------------------ bert


def probe_reference():
    import tokenizers
    from tokenizers import normalizers, pre_tokenizers

    version = tokenizers.__version__
    # White_Space: BertNormalizer's clean text maps it to ' ' (and drops controls); the pre-tokenizer splits on it.
    clean = per_code_point(
        normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False
        ).normalize_str,
        separator="a",
    )
    whitespace = _pretokenizer_whitespace(pre_tokenizers.BertPreTokenizer())
    # Clean text drops the whitespace that is also a control character (U+000B, U+000C, U+0085) first.
    if any(clean[c] not in (" ", "") for c in whitespace) or any(
        out == " " and c not in whitespace for c, out in clean.items()
    ):
        raise RuntimeError("clean text and the pre-tokenizer disagree on whitespace")

    lower = per_code_point(normalizers.Lowercase().normalize_str)
    lowercase = {c: out for c, out in lower.items() if out != chr(c)}

    nfd = normalizers.NFD().normalize_str
    decomposed = per_code_point(nfd)
    decompositions = {c: out for c, out in decomposed.items() if out != chr(c)}
    for c in range(S_BASE, S_BASE + S_COUNT):
        if decompositions.pop(c, None) != hangul_decomposition(c):
            raise RuntimeError(f"U+{c:04X}: the reference does not decompose Hangul algorithmically")

    # Non-starters (canonical combining class > 0) among the characters NFD leaves alone: U+0334 (class 1,
    # the lowest) and U+0301 (class 230) bracket them. X moves before U+0334 iff class(X) > 1; X moves
    # before U+0301 iff 0 < class(X) < 230.
    if nfd("\u0301\u0334") != "\u0334\u0301":
        raise RuntimeError("the reference does not reorder U+0301 U+0334")
    stable = [c for c in CODE_POINTS if decomposed[c] == chr(c) and c != 0x20]

    def swapped(pattern) -> set[int]:
        texts = [pattern(chr(c)) for c in stable]
        out = nfd(" ".join(texts)).split(" ")
        return {c for c, t, o in zip(stable, texts, out) if t != o}

    non_starters = sorted(swapped(lambda x: x + "\u0334") | swapped(lambda x: "\u0301" + x))
    pairs = [(a, b) for a in non_starters for b in non_starters]
    out = nfd(" ".join(chr(a) + chr(b) for a, b in pairs)).split(" ")
    after = {(a, b) for (a, b), o in zip(pairs, out) if o != chr(a) + chr(b)}  # class(a) > class(b)

    def compare(a, b):
        return 1 if (a, b) in after else -1 if (b, a) in after else 0

    ordered = sorted(non_starters, key=functools.cmp_to_key(compare))
    rank, previous, current = {}, None, 0
    for c in ordered:
        if previous is None or compare(previous, c) != 0:
            current += 1
        rank[c] = current
        previous = c
    for a, b in pairs:  # a total preorder, or the ranks would not reproduce the reference
        if ((a, b) in after) != (rank[a] > rank[b]):
            raise RuntimeError(f"combining classes of U+{a:04X}, U+{b:04X} are not a total order")
    for c, d in decompositions.items():
        for x in d:
            if ord(x) not in stable:
                raise RuntimeError(f"U+{c:04X} decomposes to U+{ord(x):04X}, which decomposes further")
    return version, whitespace, lowercase, decompositions, rank


def _pretokenizer_whitespace(split) -> list[int]:
    """Code points on which BertPreTokenizer splits and which it removes (whitespace), read off the library."""
    # "a" X "b": whitespace gives the words a, b; punctuation a, X, b; anything else one word.
    texts = [f"a{chr(c)}b" for c in CODE_POINTS]
    out = []
    chunk = 4096
    for i in range(0, len(texts), chunk):
        batch = texts[i : i + chunk]
        words = split.pre_tokenize_str(" ".join(batch))
        # rebuild: every item is separated by ' ', so count words per item by offsets
        bounds, start = [], 0
        for t in batch:
            bounds.append((start, start + len(t)))
            start += len(t) + 1
        k = 0
        for (lo, hi), c in zip(bounds, CODE_POINTS[i : i + chunk]):
            inside = []
            while k < len(words) and words[k][1][0] < hi:
                if words[k][1][0] >= lo:
                    inside.append(words[k][0])
                k += 1
            if inside == ["a", "b"]:
                out.append(c)
    return sorted(out)


def render_bert(version, whitespace, lowercase, decompositions, rank) -> str:
    lines = [
        f"// @generated by scripts/generate_unicode_tables.py bert, from Hugging Face tokenizers {version}.",
        '// Do not edit: regenerate (see docs/qikfind.md, "Unicode policy").',
        "//",
        "// What the reference does with each code point, read off the library itself: its White_Space, its",
        "// lowercase mapping, its canonical decompositions (Hangul syllables excepted: algorithmic) and the",
        "// order of its canonical combining classes (ranks: only the order matters to canonical reordering).",
        "",
        f'pub const REFERENCE: &str = "tokenizers {version}";',
        "",
        "/// `char::is_whitespace` as the reference sees it (BertNormalizer's clean text, BertPreTokenizer).",
        "pub static WHITESPACE: &[u32] = &[",
    ]
    lines += _wrap([f"0x{c:X}," for c in whitespace])
    single = {c: ord(v) for c, v in lowercase.items() if len(v) == 1}
    runs: list[list[int]] = []  # [first, last, stride, delta]
    for c, lower in sorted(single.items()):
        delta = lower - c
        if (
            runs
            and runs[-1][3] == delta
            and ((runs[-1][0] == runs[-1][1] and c - runs[-1][1] in (1, 2)) or c - runs[-1][1] == runs[-1][2])
        ):
            runs[-1][2] = c - runs[-1][1]
            runs[-1][1] = c
        else:
            runs.append([c, c, 1, delta])
    lines += [
        "];",
        "",
        "/// Lowercase to one character: (first, last, stride, delta): every stride-th code point from first",
        "/// to last lowercases to itself + delta.",
        "pub static LOWERCASE: &[(u32, u32, u32, i32)] = &[",
    ]
    lines += _wrap([f"(0x{a:X}, 0x{b:X}, {k}, {d})," for a, b, k, d in runs])
    lines += ["];", "", "/// Lowercase to several characters.", "pub static LOWERCASE_EXPANSIONS: &[(u32, &str)] = &["]
    lines += _wrap([f"(0x{c:X}, {_rust_str(v)})," for c, v in sorted(lowercase.items()) if len(v) > 1])
    lines += [
        "];",
        "",
        "/// Full canonical decomposition, canonically ordered (the first char is the original's own).",
        "pub static DECOMPOSITION: &[(u32, &str)] = &[",
    ]
    lines += _wrap([f"(0x{c:X}, {_rust_str(v)})," for c, v in sorted(decompositions.items())])
    lines += [
        "];",
        "",
        "/// Non-starters: (first, last, rank of the canonical combining class), ranks from 1 upwards.",
        "pub static COMBINING_RANK: &[(u32, u32, u8)] = &[",
    ]
    runs: list[list[int]] = []
    for c in sorted(rank):
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == rank[c]:
            runs[-1][1] = c
        else:
            runs.append([c, c, rank[c]])
    lines += _wrap([f"(0x{a:X}, 0x{b:X}, {r})," for a, b, r in runs])
    lines += ["];", ""]
    return "\n".join(lines)


def _rust_str(value: str) -> str:
    return '"' + "".join(x if x.isascii() and x.isalnum() else f"\\u{{{ord(x):x}}}" for x in value) + '"'


def _wrap(items: list[str], width: int = 116) -> list[str]:
    lines, line = [], "   "
    for item in items:
        if len(line) + 1 + len(item) > width:
            lines.append(line)
            line = "   "
        line += " " + item
    if line.strip():
        lines.append(line)
    return lines


# ------------------------------------------------------------------------------------------- bytelevel


def probe_byte_level():
    """Letters, numbers and whitespace as the reference's ByteLevel pre-tokenizer (its regex engine) sees them.

    ``aXa`` stays one piece iff X is a letter (``\\p{L}+``), ``1X1`` iff X is a number, ``!X!`` iff X is
    neither a letter, a number nor whitespace (``[^\\s\\p{L}\\p{N}]+``); what none of them keeps whole is
    whitespace. Each probe is one item of a long text, items separated by a newline between two letters
    or digits or punctuation (a whitespace piece of its own)."""
    import tokenizers
    from tokenizers import pre_tokenizers

    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str

    def whole(left: str, right: str) -> set[int]:
        out = set()
        for i in range(0, len(CODE_POINTS), 8192):
            block = CODE_POINTS[i : i + 8192]
            texts = [f"{left}{chr(c)}{right}" for c in block]
            spans = {offsets for _, offsets in split("\n".join(texts))}
            start = 0
            for c, text in zip(block, texts):
                if (start, start + len(text)) in spans:
                    out.add(c)
                start += len(text) + 1
        return out

    letters, numbers, other = whole("a", "a"), whole("1", "1"), whole("!", "!")
    if letters & numbers or letters & other or numbers & other:
        raise RuntimeError("a code point in two of the pattern's classes")
    whitespace = sorted(set(CODE_POINTS) - letters - numbers - other)
    if whitespace != WHITE_SPACE:
        raise RuntimeError(f"the pattern's \\s is not Unicode White_Space: {[hex(c) for c in whitespace]}")
    # The three classes in one table of (first, last, class) runs; 'other' is everything not in it.
    classes = {
        **dict.fromkeys(letters, "LETTER"),
        **dict.fromkeys(numbers, "NUMBER"),
        **dict.fromkeys(whitespace, "WHITESPACE"),
    }
    runs: list[list] = []
    for c in sorted(classes):
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == classes[c]:
            runs[-1][1] = c
        else:
            runs.append([c, c, classes[c]])
    return tokenizers.__version__, runs


def render_byte_level(version, runs) -> str:
    lines = [
        f"// @generated by scripts/generate_unicode_tables.py bytelevel, from Hugging Face tokenizers {version}.",
        '// Do not edit: regenerate (see docs/qikfind.md, "Unicode policy").',
        "//",
        "// The character classes of the GPT-2 pattern as the reference's ByteLevel pre-tokenizer applies it",
        "// (\\p{L}, \\p{N}, \\s of its regex engine), read off the pre-tokenizer itself.",
        "",
        f'pub const REFERENCE: &str = "tokenizers {version}";',
        "",
        "/// The classes of the GPT-2 pattern: `\\p{L}`, `\\p{N}`, `\\s`, and everything else.",
        "#[derive(Debug, Clone, Copy, PartialEq, Eq)]",
        "pub enum Class {",
        "    Letter,",
        "    Number,",
        "    Whitespace,",
        "    Other,",
        "}",
        "",
        "use Class::{Letter as L, Number as N, Whitespace as S};",
        "",
        "/// (first, last, class): letters, numbers and whitespace; every other code point is `Class::Other`.",
        "pub static CLASSES: &[(u32, u32, Class)] = &[",
    ]
    short = {"LETTER": "L", "NUMBER": "N", "WHITESPACE": "S"}
    lines += _wrap([f"(0x{a:X}, 0x{b:X}, {short[k]})," for a, b, k in runs])
    lines += ["];", ""]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------- sentence


def sentence_classes() -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
    python_white_space = [c for c in CODE_POINTS if chr(c).isspace() and not 0x1C <= c <= 0x1F]
    if python_white_space != WHITE_SPACE:
        raise RuntimeError("this Python's whitespace is not Unicode White_Space plus U+001C..U+001F")
    uppercase = [c for c in CODE_POINTS if chr(c).isupper()]
    return unicodedata.unidata_version, ranges(WHITE_SPACE), ranges(uppercase)


def render_sentence_rs(version, white_space, uppercase) -> str:
    lines = [
        f"// @generated by scripts/generate_unicode_tables.py sentence (Unicode {version}). Do not edit.",
        "// The classes of bioptimus_hf/vocabulary/_sentence_classes.py (tests/test_qikfind_parity.py checks it).",
        "",
        f'pub const UNICODE_VERSION: &str = "{version}";',
        "",
        "/// Unicode White_Space: where sentences are stripped, split and chunked.",
        "pub static WHITE_SPACE: &[(u32, u32)] = &[",
    ]
    lines += _wrap([f"(0x{a:X}, 0x{b:X})," for a, b in white_space])
    lines += [
        "];",
        "",
        "/// Unicode Uppercase: a sentence may start with one (or with an ASCII digit).",
        "pub static UPPERCASE: &[(u32, u32)] = &[",
    ]
    lines += _wrap([f"(0x{a:X}, 0x{b:X})," for a, b in uppercase])
    lines += ["];", ""]
    return "\n".join(lines)


def render_sentence_py(version, white_space, uppercase) -> str:
    lines = [
        f"# @generated by scripts/generate_unicode_tables.py sentence (Unicode {version}). Do not edit.",
        "# The classes of rust/src/generated/sentence_classes.rs (tests/test_qikfind_parity.py checks it).",
        '"""The sentence splitter\'s character classes as (first, last, step) runs: every step-th code point from first',
        'to last."""',
        "",
        f'UNICODE_VERSION = "{version}"',
        "",
        "# fmt: off",
        "# Unicode White_Space: where sentences are stripped, split and chunked.",
        "WHITE_SPACE = (",
    ]
    lines += _wrap([f"(0x{a:X}, 0x{b:X}, {k})," for a, b, k in stepped_runs(white_space)])
    lines += [")", "# Unicode Uppercase: a sentence may start with one (or with an ASCII digit).", "UPPERCASE = ("]
    lines += _wrap([f"(0x{a:X}, 0x{b:X}, {k})," for a, b, k in stepped_runs(uppercase)])
    lines += [")", "# fmt: on", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ main


def committed_sentence_version() -> str | None:
    if not SENTENCE_PY.exists():
        return None
    for line in SENTENCE_PY.read_text(encoding="utf-8").splitlines():
        if line.startswith("UNICODE_VERSION"):
            return line.split('"')[1]
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["bert", "bytelevel", "sentence", "check"])
    parser.add_argument("--unicode-version", help="sentence: the Unicode version to generate (must be this Python's)")
    args = parser.parse_args(argv)

    outputs: dict[Path, str] = {}
    if args.what in ("bert", "check"):
        outputs[BERT_RS] = render_bert(*probe_reference())
    if args.what in ("bytelevel", "check"):
        outputs[BYTE_LEVEL_RS] = render_byte_level(*probe_byte_level())
    if args.what == "sentence" or (
        args.what == "check" and committed_sentence_version() == unicodedata.unidata_version
    ):
        version, white_space, uppercase = sentence_classes()
        if args.what == "sentence" and args.unicode_version != version:
            parser.error(
                f"this Python has Unicode {version}; pass --unicode-version {version} to regenerate "
                f"the sentence classes with it (committed: {committed_sentence_version()})"
            )
        outputs[SENTENCE_RS] = render_sentence_rs(version, white_space, uppercase)
        outputs[SENTENCE_PY] = render_sentence_py(version, white_space, uppercase)
    stale = 0
    for path, text in outputs.items():
        if args.what == "check":
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                print(f"stale: {path.relative_to(ROOT)}", file=sys.stderr)
                stale += 1
            else:
                print(f"up to date: {path.relative_to(ROOT)}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)} ({len(text):,} bytes)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
