//! Decoding lines and splitting them into sentences, exactly as `bioptimus_hf/vocabulary/qikfind.py`
//! does: both take their character classes from one generated table (`generated/sentence_classes.rs`,
//! `_sentence_classes.py`), never from their own Unicode version.

use crate::generated::sentence_classes;
use crate::utils::unicode::{in_ranges, is_space};

/// Decode UTF-8, replacing each maximal invalid sub-sequence with U+FFFD (what
/// `String::from_utf8_lossy` and Python's `errors="replace"` both do). Returns the text and the
/// number of replacements.
pub fn decode_lossy(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, usize) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), 0),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            let mut replacements = 0;
            let mut rest = bytes;
            loop {
                match std::str::from_utf8(rest) {
                    Ok(text) => {
                        out.push_str(text);
                        break;
                    }
                    Err(error) => {
                        let valid = error.valid_up_to();
                        // SAFETY-free: from_utf8 just validated this prefix.
                        out.push_str(std::str::from_utf8(&rest[..valid]).unwrap());
                        out.push('\u{FFFD}');
                        replacements += 1;
                        match error.error_len() {
                            Some(length) => rest = &rest[valid + length..],
                            None => break, // truncated sequence at the end: one replacement
                        }
                    }
                }
            }
            (std::borrow::Cow::Owned(out), replacements)
        }
    }
}

/// An uppercase letter (Unicode Uppercase of the table's pinned version, not this Rust's) or an ASCII digit.
#[inline]
fn starts_sentence(c: char) -> bool {
    c.is_ascii_digit() || in_ranges(sentence_classes::UPPERCASE, c)
}

/// Split one line into stripped, non-empty sentences (byte ranges into `line`), cutting sentences
/// longer than `max_chars` code points into chunks. Returns how many sentences had to be cut.
pub fn split_sentences(line: &str, max_chars: usize, out: &mut Vec<(usize, usize)>) -> usize {
    assert!(max_chars >= 1, "max_chars must be >= 1");
    let mut chunked = 0;
    let mut piece_start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if c != '.' && c != '!' && c != '?' {
            continue;
        }
        let mut saw_space = false;
        while let Some(&(_, next)) = chars.peek() {
            if is_space(next) {
                saw_space = true;
                chars.next();
            } else {
                break;
            }
        }
        if saw_space {
            if let Some(&(next_index, next)) = chars.peek() {
                if starts_sentence(next) {
                    chunked += push_piece(line, piece_start, index + 1, max_chars, out);
                    piece_start = next_index;
                }
            }
        }
    }
    chunked += push_piece(line, piece_start, line.len(), max_chars, out);
    chunked
}

fn trimmed(line: &str, start: usize, end: usize) -> (usize, usize) {
    let piece = &line[start..end];
    let left = piece.len() - piece.trim_start_matches(is_space).len();
    let right = piece.trim_end_matches(is_space).len();
    if right <= left {
        (start, start)
    } else {
        (start + left, start + right)
    }
}

fn push_piece(line: &str, start: usize, end: usize, max_chars: usize, out: &mut Vec<(usize, usize)>) -> usize {
    let (start, end) = trimmed(line, start, end);
    if start == end {
        return 0;
    }
    let piece = &line[start..end];
    // Fast exit: a piece of at most max_chars bytes has at most max_chars code points.
    if piece.len() <= max_chars || piece.chars().count() <= max_chars {
        out.push((start, end));
        return 0;
    }
    // Greedy chunks: the longest prefix of <= max_chars code points that ends just before a
    // whitespace character, or a hard cut at max_chars when there is none.
    let mut rest_start = start;
    loop {
        let rest = &line[rest_start..end];
        let positions: Vec<(usize, char)> = rest.char_indices().take(max_chars + 1).collect();
        if positions.len() <= max_chars {
            if !rest.is_empty() {
                out.push((rest_start, end));
            }
            break;
        }
        let mut cut = max_chars;
        while cut > 0 && !is_space(positions[cut].1) {
            cut -= 1;
        }
        if cut == 0 {
            cut = max_chars;
        }
        let cut_byte = rest_start + positions[cut].0;
        let (chunk_start, chunk_end) = trimmed(line, rest_start, cut_byte);
        if chunk_start < chunk_end {
            out.push((chunk_start, chunk_end));
        }
        let after = &line[cut_byte..end];
        rest_start = end - after.trim_start_matches(is_space).len();
        if rest_start >= end {
            break;
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str, max: usize) -> (Vec<&str>, usize) {
        let mut ranges = Vec::new();
        let chunked = split_sentences(line, max, &mut ranges);
        (ranges.into_iter().map(|(a, b)| &line[a..b]).collect(), chunked)
    }

    #[test]
    fn splits_after_terminal_punctuation_before_uppercase_or_digit() {
        assert_eq!(split("One. Two! 3 three? four. Five", 1000).0, vec!["One.", "Two!", "3 three? four.", "Five"]);
        assert_eq!(split("IL - 2 . The p53 gene . 5 mice .", 1000).0, vec!["IL - 2 .", "The p53 gene .", "5 mice ."]);
        assert_eq!(split("e.g. this. Über alles", 1000).0, vec!["e.g. this.", "Über alles"]);
        assert_eq!(split("no space.Next  ", 1000).0, vec!["no space.Next"]);
        assert!(split("  \t ", 1000).0.is_empty());
        assert_eq!(split("\u{1f}a b\u{3000}", 1000).0, vec!["\u{1f}a b"]);
        // U+1C89 is Uppercase since Unicode 16, not in the pinned Unicode 14 table: no split.
        assert_eq!(split("a. \u{1C89}b", 1000).0, vec!["a. \u{1C89}b"]);
        assert_eq!(split("a. \u{100}b", 1000).0, vec!["a.", "\u{100}b"]);
    }

    #[test]
    fn classes_come_from_the_table() {
        for c in ['\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{85}', '\u{a0}', '\u{2000}', '\u{3000}'] {
            assert!(is_space(c), "{c:?}");
        }
        for c in ['\u{1c}', '\u{1f}', '\u{180e}', '\u{200b}', 'a'] {
            assert!(!is_space(c), "{c:?}");
        }
        assert_eq!(sentence_classes::UNICODE_VERSION, "14.0.0");
        assert!(starts_sentence('A') && starts_sentence('7') && starts_sentence('Σ') && !starts_sentence('σ'));
        assert!(!starts_sentence('٣')); // a digit, not ASCII
    }

    #[test]
    fn chunks_long_sentences_at_whitespace() {
        assert_eq!(split("aaaa bbbb cccc dddd", 10), (vec!["aaaa bbbb", "cccc dddd"], 1));
        assert_eq!(split("abcdefghijkl mn", 5).0, vec!["abcde", "fghij", "kl mn"]);
        assert_eq!(split("ab   cdefgh", 4).0, vec!["ab", "cdef", "gh"]);
        // Code points, not bytes.
        assert_eq!(split("éé éé", 5), (vec!["éé éé"], 0));
        assert_eq!(split("ééé éé", 5), (vec!["ééé", "éé"], 1));
    }

    #[test]
    fn decodes_with_one_replacement_per_maximal_invalid_subsequence() {
        let (text, n) = decode_lossy(b"a\x80b\xe2\x82 c\xc0\xafd\xff");
        assert_eq!(text, "a\u{FFFD}b\u{FFFD} c\u{FFFD}\u{FFFD}d\u{FFFD}");
        assert_eq!(n, 5);
        assert_eq!(text, String::from_utf8_lossy(b"a\x80b\xe2\x82 c\xc0\xafd\xff"));
        let (text, n) = decode_lossy(b"tail \xf0\x9f\x98");
        assert_eq!((text.as_ref(), n), ("tail \u{FFFD}", 1));
        assert_eq!(decode_lossy("ok é".as_bytes()), (std::borrow::Cow::Borrowed("ok é"), 0));
    }
}
