//! BERT's normaliser (`BertNormalizer` of Hugging Face `tokenizers`), with alignments.
//!
//! The reference applies four passes to the whole text of a segment (the text between added tokens),
//! each keeping, for every byte of the normalised text, the original byte range it is aligned to:
//!
//! 1. clean text: drop NUL, U+FFFD and control characters (Cc, Cf, Co; not tab, newline, CR), map
//!    whitespace to a space;
//! 2. Chinese characters: a space before and after each CJK ideograph;
//! 3. strip accents: NFD of the whole text, i.e. each character decomposed and every run of
//!    non-starters stably sorted by combining class (canonical reordering, across the characters of the
//!    original text), then non-spacing marks (Mn) dropped;
//! 4. lowercase, character by character.
//!
//! A pass aligns its output positionally: the k-th character that replaces an existing one takes the
//! alignment of the k-th character of its input, a character it inserts takes that of the input
//! character before it. So after canonical reordering, a mark is aligned to the position it moved to,
//! not to the character it came from. Here the passes run in one streaming loop; only NFD needs a buffer
//! (one run of non-starters).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::utils::unicode::{
    combining_rank, decompose, is_chinese_char, is_control, is_mark_nonspacing, is_whitespace, lowercase,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BertNormalizer {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    pub strip_accents: bool,
    pub lowercase: bool,
}

/// A normalised text: its characters and, for each, the original byte range it is aligned to.
#[derive(Default, Debug)]
pub struct Normalized {
    pub text: String,
    /// Byte offset of each character in `text`, then `text.len()`.
    pub char_starts: Vec<u32>,
    /// Original byte range (start, end) of each character.
    pub align: Vec<(u32, u32)>,
    reorder: Reorder,
}

impl Normalized {
    pub fn len_chars(&self) -> usize {
        self.align.len()
    }

    /// The text of normalised characters `first..last`.
    pub fn slice(&self, first: usize, last: usize) -> &str {
        &self.text[self.char_starts[first] as usize..self.char_starts[last] as usize]
    }

    fn clear(&mut self) {
        self.text.clear();
        self.char_starts.clear();
        self.align.clear();
        self.reorder.clear();
    }

    #[inline]
    fn push(&mut self, c: char, align: (u32, u32)) {
        self.char_starts.push(self.text.len() as u32);
        self.text.push(c);
        self.align.push(align);
    }
}

/// NFD state: the pending run of decomposed characters (rank, char, is the first of its original
/// character), the alignments of the input characters not yet consumed, and the last one consumed.
#[derive(Default, Debug)]
struct Reorder {
    pending: Vec<(u8, char, bool)>,
    inputs: std::collections::VecDeque<(u32, u32)>,
    last: (u32, u32),
}

impl Reorder {
    fn clear(&mut self) {
        self.pending.clear();
        self.inputs.clear();
    }
}

/// Where normalised characters go: a `Normalized` (with alignments) or a plain `String`.
trait Sink {
    fn push(&mut self, c: char, align: (u32, u32));
}

impl Sink for Normalized {
    #[inline]
    fn push(&mut self, c: char, align: (u32, u32)) {
        Normalized::push(self, c, align)
    }
}

struct StringSink<'a>(&'a mut String);

impl Sink for StringSink<'_> {
    #[inline]
    fn push(&mut self, c: char, _: (u32, u32)) {
        self.0.push(c)
    }
}

fn flag(value: &Value, key: &str, default: bool) -> Result<bool> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Error::InvalidTokenizer(format!("`{key}` should be a boolean, got {other}"))),
    }
}

impl BertNormalizer {
    /// From the `normalizer` object of a tokenizer.json.
    pub fn from_json(normalizer: &Value) -> Result<Self> {
        if normalizer.get("type").and_then(Value::as_str) != Some("BertNormalizer") {
            return Err(Error::unsupported(format!("normalizer must be BertNormalizer, got {normalizer}")));
        }
        let lowercase = flag(normalizer, "lowercase", true)?;
        Ok(BertNormalizer {
            clean_text: flag(normalizer, "clean_text", true)?,
            handle_chinese_chars: flag(normalizer, "handle_chinese_chars", true)?,
            // strip_accents: null means "same as lowercase".
            strip_accents: flag(normalizer, "strip_accents", lowercase)?,
            lowercase,
        })
    }

    /// From a tokenizer_config.json next to a vocab.txt (`do_lower_case`, `strip_accents`,
    /// `tokenize_chinese_chars`; BERT's defaults when absent).
    pub fn from_tokenizer_config(config: &Value) -> Result<Self> {
        let lowercase = flag(config, "do_lower_case", true)?;
        Ok(BertNormalizer {
            clean_text: true,
            handle_chinese_chars: flag(config, "tokenize_chinese_chars", true)?,
            strip_accents: flag(config, "strip_accents", lowercase)?,
            lowercase,
        })
    }

    /// Normalise `segment`, whose first byte is at `base` in the original text, into `out`.
    pub fn normalize(&self, segment: &str, base: usize, out: &mut Normalized) {
        out.clear();
        let mut reorder = std::mem::take(&mut out.reorder);
        self.run(segment, base, &mut reorder, out);
        out.char_starts.push(out.text.len() as u32);
        out.reorder = reorder;
    }

    /// The normalised text alone (the prefilter's view of a segment), appended to `out`.
    pub fn normalize_str(&self, segment: &str, out: &mut String) {
        thread_local! {
            static REORDER: std::cell::RefCell<Reorder> = Default::default();
        }
        REORDER.with(|reorder| {
            let mut reorder = reorder.borrow_mut();
            reorder.clear();
            self.run(segment, 0, &mut reorder, &mut StringSink(out));
        });
    }

    fn run<S: Sink>(&self, segment: &str, base: usize, reorder: &mut Reorder, sink: &mut S) {
        reorder.last = (base as u32, base as u32);
        for (offset, c) in segment.char_indices() {
            let align = ((base + offset) as u32, (base + offset + c.len_utf8()) as u32);
            let mut c = c;
            if self.clean_text {
                if c == '\0' || c == '\u{FFFD}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    c = ' ';
                }
            }
            if self.handle_chinese_chars && is_chinese_char(c) {
                self.accents(' ', align, reorder, sink);
                self.accents(c, align, reorder, sink);
                self.accents(' ', align, reorder, sink);
            } else {
                self.accents(c, align, reorder, sink);
            }
        }
        if self.strip_accents {
            self.flush(reorder, sink);
        }
    }

    /// Pass 3 for one character of pass 2's output.
    #[inline]
    fn accents<S: Sink>(&self, c: char, align: (u32, u32), reorder: &mut Reorder, sink: &mut S) {
        if !self.strip_accents {
            self.case(c, align, sink);
            return;
        }
        if c.is_ascii() && reorder.pending.is_empty() {
            // An ASCII character is a starter that decomposes to itself: nothing to reorder.
            reorder.last = align;
            self.case(c, align, sink);
            return;
        }
        reorder.inputs.push_back(align);
        let mut first = true;
        decompose(c, |d| {
            let rank = combining_rank(d);
            if rank == 0 {
                self.flush(reorder, sink);
            }
            reorder.pending.push((rank, d, first));
            first = false;
        });
    }

    /// Emit the pending run in canonical order, aligned positionally, dropping non-spacing marks.
    fn flush<S: Sink>(&self, reorder: &mut Reorder, sink: &mut S) {
        if reorder.pending.is_empty() {
            return;
        }
        if reorder.pending.len() > 1 {
            reorder.pending.sort_by_key(|p| p.0); // stable: equal classes keep their order
        }
        for i in 0..reorder.pending.len() {
            let (_, d, first) = reorder.pending[i];
            if first {
                reorder.last = reorder.inputs.pop_front().expect("one input per first character");
            }
            if !is_mark_nonspacing(d) {
                self.case(d, reorder.last, sink);
            }
        }
        reorder.pending.clear();
    }

    /// Pass 4.
    #[inline]
    fn case<S: Sink>(&self, c: char, align: (u32, u32), sink: &mut S) {
        if self.lowercase {
            lowercase(c, |l| sink.push(l, align));
        } else {
            sink.push(c, align);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNCASED: BertNormalizer =
        BertNormalizer { clean_text: true, handle_chinese_chars: true, strip_accents: true, lowercase: true };

    fn normalize(n: &BertNormalizer, text: &str) -> (String, Vec<(u32, u32)>) {
        let mut out = Normalized::default();
        n.normalize(text, 0, &mut out);
        let mut plain = String::new();
        n.normalize_str(text, &mut plain);
        assert_eq!(plain, out.text);
        (out.text.clone(), out.align.clone())
    }

    #[test]
    fn cleans_spaces_out_chinese_strips_accents_and_lowercases() {
        let (text, align) = normalize(&UNCASED, "Ca\u{0}fé\t中X");
        assert_eq!(text, "cafe  中 x");
        assert_eq!(align, vec![(0, 1), (1, 2), (3, 4), (4, 6), (6, 7), (7, 10), (7, 10), (7, 10), (10, 11)]);
        let cased = BertNormalizer { lowercase: false, strip_accents: false, ..UNCASED };
        assert_eq!(normalize(&cased, "İé").0, "İé");
        let keep_accents = BertNormalizer { strip_accents: false, ..UNCASED };
        assert_eq!(normalize(&keep_accents, "İ").0, "i\u{307}");
        assert_eq!(normalize(&keep_accents, "İ").1, vec![(0, 2), (0, 2)]);
    }

    #[test]
    fn canonical_reordering_aligns_by_position() {
        let strip = BertNormalizer { lowercase: false, ..UNCASED };
        // 'a', U+1D165 (class 216, Mc: kept), U+0F71 (class 129, Mn: dropped) -> a, U+0F71, U+1D165 before
        // the filter. U+1D165 moved to the third input position, so it is aligned to U+0F71's bytes.
        let (text, align) = normalize(&strip, "a\u{1D165}\u{F71}");
        assert_eq!(text, "a\u{1D165}");
        assert_eq!(align, vec![(0, 1), (5, 8)]);
        // Characters a decomposition adds share the alignment of the character before them.
        assert_eq!(normalize(&strip, "가각").1, vec![(0, 3), (0, 3), (3, 6), (3, 6), (3, 6)]);
    }
}
