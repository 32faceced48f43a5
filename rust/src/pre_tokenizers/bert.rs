//! BERT's pre-tokenizer (`BertPreTokenizer`): words are separated by whitespace, which is dropped, and
//! every punctuation character is a word of its own.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::normalizers::bert::Normalized;
use crate::utils::unicode::{is_punctuation, is_whitespace};

#[derive(Debug, Clone, Copy, Default)]
pub struct BertPreTokenizer;

impl BertPreTokenizer {
    /// From the `pre_tokenizer` object of a tokenizer.json.
    pub fn from_json(pre_tokenizer: &Value) -> Result<Self> {
        if pre_tokenizer.get("type").and_then(Value::as_str) != Some("BertPreTokenizer") {
            return Err(Error::unsupported(format!("pre_tokenizer must be BertPreTokenizer, got {pre_tokenizer}")));
        }
        Ok(BertPreTokenizer)
    }

    /// The words of a normalised text, as (first char, end char) ranges of its characters.
    pub fn split(&self, normalized: &Normalized, words: &mut Vec<(u32, u32)>) {
        words.clear();
        let mut word_start: Option<u32> = None;
        for (index, c) in normalized.text.chars().enumerate() {
            let index = index as u32;
            if is_whitespace(c) {
                if let Some(start) = word_start.take() {
                    words.push((start, index));
                }
            } else if is_punctuation(c) {
                if let Some(start) = word_start.take() {
                    words.push((start, index));
                }
                words.push((index, index + 1));
            } else if word_start.is_none() {
                word_start = Some(index);
            }
        }
        if let Some(start) = word_start {
            words.push((start, normalized.len_chars() as u32));
        }
    }

    /// The words of plain ASCII text (printable, tab, newline, carriage return), which BERT's normaliser
    /// leaves as it is but for case: byte ranges, runs of alphanumerics or one punctuation character.
    pub fn split_ascii<F: FnMut(usize, usize)>(&self, text: &str, mut word: F) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b' ' || b == b'\t' || b == b'\n' || b == b'\r' {
                i += 1;
                continue;
            }
            let start = i;
            if b.is_ascii_punctuation() {
                i += 1;
            } else {
                while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                    i += 1;
                }
            }
            word(start, i);
        }
    }
}

/// Printable ASCII plus tab, newline and carriage return: text that BERT's normaliser only lowercases.
#[inline]
pub fn is_plain_ascii(text: &str) -> bool {
    text.bytes().all(|b| (0x20..0x7f).contains(&b) || b == b'\t' || b == b'\n' || b == b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalizers::bert::BertNormalizer;

    #[test]
    fn splits_on_whitespace_and_isolates_punctuation() {
        let normalizer =
            BertNormalizer { clean_text: false, handle_chinese_chars: false, strip_accents: false, lowercase: false };
        let mut normalized = Normalized::default();
        normalizer.normalize("IL-2 (p53)\u{3000}x\u{85}y", 0, &mut normalized);
        let mut words = Vec::new();
        BertPreTokenizer.split(&normalized, &mut words);
        let got: Vec<&str> = words.iter().map(|&(a, b)| normalized.slice(a as usize, b as usize)).collect();
        assert_eq!(got, vec!["IL", "-", "2", "(", "p53", ")", "x", "y"]);
        let mut ascii = Vec::new();
        BertPreTokenizer.split_ascii("IL-2 (p53)", |a, b| ascii.push(&"IL-2 (p53)"[a..b]));
        assert_eq!(ascii, vec!["IL", "-", "2", "(", "p53", ")"]);
    }
}
