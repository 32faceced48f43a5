//! The `ByteLevel` pre-tokenizer of GPT-2 and RoBERTa (Hugging Face `tokenizers`' `ByteLevel` with
//! `use_regex: true`), and the byte-level alphabet (`byte_char`) that the BPE model works on.
//!
//! Pre-tokenization of one segment (the text between added tokens):
//!
//! 1. with `add_prefix_space`, a space is put before a segment that does not start with U+0020; it is
//!    aligned to the segment's first character (the reference's `NormalizedString::prepend`);
//! 2. the segment is cut by the GPT-2 pattern
//!    `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, matched leftmost-first,
//!    match after match; it matches at every position, so the pieces cover the segment. It is written out
//!    here as a scanner over character classes (`Class`) read off the reference's regex engine
//!    (`generated/byte_level_classes.rs`), so no regex crate and no Unicode version of this Rust is involved;
//! 3. every byte of a piece becomes one character of the byte-level alphabet (`byte_char`), aligned to the
//!    original character the byte belongs to. The BPE model (`models::bpe`) then works on these bytes.

use serde_json::Value;

use crate::error::{Error, Result};
pub use crate::generated::byte_level_classes::Class;
use crate::generated::byte_level_classes::CLASSES;

const fn ascii_class(b: u8) -> Class {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Number,
        b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => Class::Whitespace,
        _ => Class::Other,
    }
}

static ASCII_CLASSES: [Class; 128] = {
    let mut table = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        table[b] = ascii_class(b as u8);
        b += 1;
    }
    table
};

/// The class of `c` as the reference's pattern sees it.
#[inline]
pub fn class(c: char) -> Class {
    let code = c as u32;
    if code < 128 {
        return ASCII_CLASSES[code as usize];
    }
    let i = CLASSES.partition_point(|r| r.0 <= code);
    if i > 0 && code <= CLASSES[i - 1].1 {
        CLASSES[i - 1].2
    } else {
        Class::Other
    }
}

/// GPT-2's byte-to-character map, as code points: printable Latin-1 bytes stand for themselves, the
/// others (controls, space, U+00A0, U+00AD) for U+0100 upwards in byte order (so the space is 'Ġ', U+0120).
/// (Code points, not chars: `char::from_u32` is not const in the Rust 1.63 the crate supports.)
const BYTE_CODES: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut next = 256u32;
    let mut b = 0usize;
    while b < 256 {
        let printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        table[b] = if printable {
            b as u32
        } else {
            next += 1;
            next - 1
        };
        b += 1;
    }
    table
};

/// The inverse: code point -> byte (-1: not a byte-level character).
static CODE_BYTES: [i16; 0x144] = {
    let mut table = [-1i16; 0x144];
    let mut b = 0usize;
    while b < 256 {
        table[BYTE_CODES[b] as usize] = b as i16;
        b += 1;
    }
    table
};

/// The byte-level character that stands for byte `b`.
#[inline]
pub fn byte_char(b: u8) -> char {
    char::from_u32(BYTE_CODES[b as usize]).expect("U+0021..U+0143")
}

/// The byte that byte-level character `c` stands for, if it is one.
pub fn char_byte(c: char) -> Option<u8> {
    match CODE_BYTES.get(c as usize) {
        Some(&b) if b >= 0 => Some(b as u8),
        _ => None,
    }
}

/// The bytes a string of byte-level characters stands for; None if one of its characters is not one.
pub fn decode_byte_level(token: &str) -> Option<Vec<u8>> {
    token.chars().map(char_byte).collect()
}

/// One character of a segment as the pattern sees it: its byte offset in the segment and its class.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    pub start: u32,
    pub c: char,
    pub class: Class,
}

/// A pre-token of a segment: the bytes `start..end` of the segment, after the prepended space if
/// `prefixed` (only the first pre-token of a segment can be).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub prefixed: bool,
    pub start: u32,
    pub end: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteLevel {
    pub add_prefix_space: bool,
}

impl ByteLevel {
    /// From the `pre_tokenizer` object of a tokenizer.json.
    pub fn from_json(pre_tokenizer: &Value) -> Result<Self> {
        if pre_tokenizer.get("type").and_then(Value::as_str) != Some("ByteLevel") {
            return Err(Error::unsupported(format!("pre_tokenizer must be ByteLevel, got {pre_tokenizer}")));
        }
        let flag = |key: &str, default: bool| match pre_tokenizer.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(Error::InvalidTokenizer(format!("`{key}` should be a boolean, got {other}"))),
        };
        if !flag("use_regex", true)? {
            return Err(Error::unsupported(
                "ByteLevel pre-tokenizer with use_regex=false (the words come from another pre-tokenizer, \
                 which is not reproduced)",
            ));
        }
        // `trim_offsets` of the pre-tokenizer is not used when pre-tokenizing (only by the post-processor).
        Ok(ByteLevel { add_prefix_space: flag("add_prefix_space", true)? })
    }

    /// Cut `segment` into pre-tokens (`words`), in order. `units` is a reusable buffer.
    pub fn split(&self, segment: &str, units: &mut Vec<Unit>, words: &mut Vec<Word>) {
        words.clear();
        self.for_each_word(segment, units, |word| words.push(word));
    }

    /// The pre-tokens of `segment`, in order. `units` is a reusable buffer (plain ASCII does without).
    #[inline]
    pub fn for_each_word<F: FnMut(Word)>(&self, segment: &str, units: &mut Vec<Unit>, mut word: F) {
        if segment.is_empty() {
            return;
        }
        let prefixed = self.add_prefix_space && !segment.starts_with(' ');
        let shift = prefixed as usize;
        if segment.is_ascii() {
            // One unit per byte: no character table needed.
            let text = Ascii { bytes: segment.as_bytes(), prefixed };
            let n = text.len();
            let mut i = 0;
            while i < n {
                let j = match_end(&text, i);
                let start = if prefixed && i == 0 { 0 } else { i - shift };
                word(Word { prefixed: prefixed && i == 0, start: start as u32, end: (j - shift) as u32 });
                i = j;
            }
            return;
        }
        units.clear();
        if prefixed {
            units.push(Unit { start: 0, c: ' ', class: Class::Whitespace });
        }
        units.extend(segment.char_indices().map(|(i, c)| Unit { start: i as u32, c, class: class(c) }));
        let text = Units(units);
        let n = units.len();
        let mut i = 0;
        while i < n {
            let j = match_end(&text, i);
            let start = if prefixed && i == 0 { 0 } else { units[i].start };
            let end = if j == n { segment.len() as u32 } else { units[j].start };
            word(Word { prefixed: prefixed && i == 0, start, end });
            i = j;
        }
    }
}

/// A segment as the pattern reads it: characters and their classes, the prepended space first if any.
trait Text {
    fn len(&self) -> usize;
    fn c(&self, i: usize) -> char;
    fn class(&self, i: usize) -> Class;
}

struct Units<'a>(&'a [Unit]);

impl Text for Units<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    fn c(&self, i: usize) -> char {
        self.0[i].c
    }
    #[inline]
    fn class(&self, i: usize) -> Class {
        self.0[i].class
    }
}

/// Plain ASCII: one unit per byte, after the prepended space if `prefixed`.
struct Ascii<'a> {
    bytes: &'a [u8],
    prefixed: bool,
}

impl Text for Ascii<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.bytes.len() + self.prefixed as usize
    }
    #[inline]
    fn c(&self, i: usize) -> char {
        if self.prefixed {
            if i == 0 {
                ' '
            } else {
                self.bytes[i - 1] as char
            }
        } else {
            self.bytes[i] as char
        }
    }
    #[inline]
    fn class(&self, i: usize) -> Class {
        ASCII_CLASSES[self.c(i) as usize]
    }
}

/// End (exclusive) of the pattern's match at unit `i`: the first alternative that matches there.
#[inline]
fn match_end<T: Text>(u: &T, i: usize) -> usize {
    let n = u.len();
    let c = u.c(i);
    // 's|'t|'re|'ve|'m|'ll|'d
    if c == '\'' && i + 1 < n {
        let third = |x: char| i + 2 < n && u.c(i + 2) == x;
        match u.c(i + 1) {
            's' | 't' | 'm' | 'd' => return i + 2,
            'r' | 'v' if third('e') => return i + 3,
            'l' if third('l') => return i + 3,
            _ => {}
        }
    }
    // ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`: one class's run, after an optional U+0020. The three
    // classes exclude each other, so the alternatives' order does not matter here.
    let first = if c == ' ' && i + 1 < n && u.class(i + 1) != Class::Whitespace { i + 1 } else { i };
    let class = u.class(first);
    if class != Class::Whitespace {
        return run_end(u, first, class);
    }
    // `\s+(?!\S)`: a whitespace run that ends the text, or all but its last character when that is
    // followed by a non-space (and the run is longer than one); else `\s+`.
    let end = run_end(u, i, Class::Whitespace);
    if end == n || end - i == 1 {
        end
    } else {
        end - 1
    }
}

#[inline]
fn run_end<T: Text>(u: &T, from: usize, class: Class) -> usize {
    let mut j = from + 1;
    while j < u.len() && u.class(j) == class {
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(add_prefix_space: bool, text: &str) -> Vec<String> {
        let (mut units, mut words) = (Vec::new(), Vec::new());
        ByteLevel { add_prefix_space }.split(text, &mut units, &mut words);
        words
            .iter()
            .map(|w| format!("{}{}", if w.prefixed { "^" } else { "" }, &text[w.start as usize..w.end as usize]))
            .collect()
    }

    #[test]
    fn splits_like_the_gpt2_pattern() {
        assert_eq!(
            split(false, "Hello my friend, how's it  going?"),
            vec!["Hello", " my", " friend", ",", " how", "'s", " it", " ", " going", "?"]
        );
        assert_eq!(
            split(false, "IL-2 (p53)  \n x'LL 'll 're'v"),
            vec!["IL", "-", "2", " (", "p", "53", ")", "  \n", " x", "'", "LL", " '", "ll", " '", "re", "'", "v"]
        );
        assert_eq!(split(false, "a  "), vec!["a", "  "]);
        assert_eq!(split(false, "a\t b"), vec!["a", "\t", " b"]);
        assert_eq!(split(false, "é中文 ٣٤ 😀😀!"), vec!["é中文", " ٣٤", " 😀😀!"]);
        // The prepended space belongs to the first pre-token, whatever it is.
        assert_eq!(split(true, "Hello world"), vec!["^Hello", " world"]);
        assert_eq!(split(true, "\n1"), vec!["^", "\n", "1"]); // the prepended space alone: "\s+(?!\S)"
        assert_eq!(split(true, " a"), vec![" a"]);
        assert!(split(true, "").is_empty());
    }

    #[test]
    fn classes_and_alphabet() {
        for b in 0..128u8 {
            let c = b as char;
            let i = CLASSES.partition_point(|r| r.0 <= b as u32);
            let table = if i > 0 && (b as u32) <= CLASSES[i - 1].1 { CLASSES[i - 1].2 } else { Class::Other };
            assert_eq!(class(c), table, "{c:?}");
        }
        assert_eq!(class('\u{3000}'), Class::Whitespace);
        assert_eq!(class('中'), Class::Letter);
        assert_eq!(class('٣'), Class::Number);
        assert_eq!(class('\u{301}'), Class::Other);
        assert_eq!(byte_char(b' '), 'Ġ');
        assert_eq!(byte_char(b'\n'), 'Ċ');
        assert_eq!(byte_char(b'a'), 'a');
        let mut seen = std::collections::HashSet::new();
        for b in 0..=255u8 {
            assert!(seen.insert(byte_char(b)));
            assert_eq!(char_byte(byte_char(b)), Some(b));
        }
        assert_eq!(char_byte('中'), None);
        assert_eq!(decode_byte_level("ĠhÃ©"), Some(" hé".as_bytes().to_vec()));
    }
}
