//! Character classes and mappings of the BERT pipeline, exactly as the reference (Hugging Face
//! `tokenizers`) applies them, independent of this Rust's Unicode version:
//!
//! * from the generated tables (`generated/bert_unicode.rs`, read off the reference): White_Space,
//!   lowercase mapping, canonical decomposition, canonical combining class order;
//! * from the `unicode_categories` crate, the one the reference itself uses (only ever released as
//!   0.1.1): control/format/private-use (`is_other`), punctuation, non-spacing marks;
//! * the CJK ideograph ranges of BERT's `_is_chinese_char`;
//! * Unicode White_Space as the sentence splitter and the added tokens' `lstrip` / `rstrip` see it, from
//!   the table both backends compile in (`generated/sentence_classes.rs`).

use unicode_categories::UnicodeCategories;

use crate::generated::bert_unicode as tables;
use crate::generated::sentence_classes;

/// `char::is_whitespace` as the reference sees it (tab, newline and carriage return included).
#[inline]
pub fn is_whitespace(c: char) -> bool {
    if c.is_ascii() {
        return matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ');
    }
    tables::WHITESPACE.binary_search(&(c as u32)).is_ok()
}

/// BERT's control characters: Cc, Cf and Co (`unicode_categories`' `is_other`), except the three
/// whitespace controls tab, newline and carriage return.
#[inline]
pub fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// BERT's punctuation: ASCII punctuation (`$`, `+`, `^`, ... included) and Unicode P*.
#[inline]
pub fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_ascii() && c.is_punctuation())
}

#[inline]
pub fn is_mark_nonspacing(c: char) -> bool {
    !c.is_ascii() && c.is_mark_nonspacing()
}

/// The CJK Unified Ideographs blocks that BERT surrounds with spaces.
#[inline]
pub fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// The reference's lowercase mapping (`char::to_lowercase` of the Rust that built it).
#[inline]
pub fn lowercase<F: FnMut(char)>(c: char, mut emit: F) {
    if c.is_ascii() {
        emit(c.to_ascii_lowercase());
        return;
    }
    let code = c as u32;
    if let Ok(i) = tables::LOWERCASE_EXPANSIONS.binary_search_by_key(&code, |e| e.0) {
        tables::LOWERCASE_EXPANSIONS[i].1.chars().for_each(emit);
        return;
    }
    let runs = tables::LOWERCASE;
    let i = runs.partition_point(|r| r.0 <= code);
    if i > 0 {
        let (first, last, stride, delta) = runs[i - 1];
        if code <= last && (code - first) % stride == 0 {
            emit(char::from_u32((code as i64 + delta as i64) as u32).expect("generated table"));
            return;
        }
    }
    emit(c)
}

const S_BASE: u32 = 0xAC00;
const L_BASE: u32 = 0x1100;
const V_BASE: u32 = 0x1161;
const T_BASE: u32 = 0x11A7;
const T_COUNT: u32 = 28;
const N_COUNT: u32 = 21 * T_COUNT;
const S_COUNT: u32 = 11172;

/// The reference's full canonical decomposition of `c` (itself when it has none), canonically ordered:
/// the first character emitted is the one that stands for `c` itself.
#[inline]
pub fn decompose<F: FnMut(char)>(c: char, mut emit: F) {
    let code = c as u32;
    if code < 0xC0 {
        emit(c);
    } else if (S_BASE..S_BASE + S_COUNT).contains(&code) {
        // Hangul syllables: algorithmic (the generator checks that the reference agrees).
        let index = code - S_BASE;
        let jamo = |x: u32| char::from_u32(x).expect("Hangul jamo");
        emit(jamo(L_BASE + index / N_COUNT));
        emit(jamo(V_BASE + (index % N_COUNT) / T_COUNT));
        if index % T_COUNT != 0 {
            emit(jamo(T_BASE + index % T_COUNT));
        }
    } else {
        match tables::DECOMPOSITION.binary_search_by_key(&code, |e| e.0) {
            Ok(i) => tables::DECOMPOSITION[i].1.chars().for_each(emit),
            Err(_) => emit(c),
        }
    }
}

/// Rank of the canonical combining class as the reference orders them: 0 for starters, and for
/// non-starters a number that orders like their class (only the order matters to canonical reordering).
#[inline]
pub fn combining_rank(c: char) -> u8 {
    let code = c as u32;
    if code < 0x300 {
        return 0;
    }
    let ranges = tables::COMBINING_RANK;
    let i = ranges.partition_point(|r| r.0 <= code);
    if i > 0 && code <= ranges[i - 1].1 {
        ranges[i - 1].2
    } else {
        0
    }
}

/// Whether `c` is in one of `ranges` (sorted, disjoint, inclusive code point ranges).
#[inline]
pub fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let code = c as u32;
    let i = ranges.partition_point(|r| r.0 <= code);
    i > 0 && code <= ranges[i - 1].1
}

/// Unicode White_Space, from the table both backends compile in (`generated/sentence_classes.rs`).
#[inline]
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        return matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ');
    }
    in_ranges(sentence_classes::WHITE_SPACE, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(c: char) -> String {
        let mut s = String::new();
        lowercase(c, |l| s.push(l));
        s
    }

    fn nfd(c: char) -> String {
        let mut s = String::new();
        decompose(c, |d| s.push(d));
        s
    }

    #[test]
    fn tables_say_what_the_reference_does() {
        assert_eq!(lower('A'), "a");
        assert_eq!(lower('\u{100}'), "\u{101}");
        assert_eq!(lower('\u{101}'), "\u{101}");
        assert_eq!(lower('İ'), "i\u{307}");
        assert_eq!(lower('Σ'), "σ"); // no final sigma: char by char
        assert_eq!(lower('\u{1C89}'), "\u{1C8A}"); // Unicode 16: the reference's Rust knows it
        assert_eq!(nfd('é'), "e\u{301}");
        assert_eq!(nfd('\u{1E69}'), "s\u{323}\u{307}"); // canonically ordered
        assert_eq!(nfd('\u{11938}'), "\u{11938}"); // Unicode 13 decomposition the reference lacks
        assert_eq!(nfd('한'), "\u{1112}\u{1161}\u{11AB}");
        assert_eq!(nfd('가'), "\u{1100}\u{1161}");
        assert_eq!(combining_rank('a'), 0);
        assert!(combining_rank('\u{334}') > 0 && combining_rank('\u{334}') < combining_rank('\u{316}'));
        assert!(combining_rank('\u{316}') < combining_rank('\u{301}'));
        assert_eq!(combining_rank('\u{301}'), combining_rank('\u{300}'));
        assert!(is_whitespace('\u{3000}') && is_whitespace('\u{85}') && !is_whitespace('\u{180E}'));
        assert!(!is_whitespace('\u{1F}'));
        assert!(is_control('\u{200B}') && !is_control('\t'));
        assert!(is_punctuation('$') && is_punctuation('、') && !is_punctuation('a'));
    }
}
