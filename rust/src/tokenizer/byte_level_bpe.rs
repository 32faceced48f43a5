//! `ByteLevelBpe`: a byte-level BPE tokenizer (GPT-2, RoBERTa) assembled from its parts, as Hugging Face
//! `tokenizers` runs a tokenizer.json with no normaliser, a `ByteLevel` pre-tokenizer and a `BPE` model:
//!
//! 1. added tokens are cut out of the text (`added_vocabulary`: `lstrip`, `rstrip` and `normalized`
//!    reproduced, `single_word` refused);
//! 2. each segment between them is cut into pre-tokens (`pre_tokenizers::byte_level`), with a prepended space if
//!    `add_prefix_space`;
//! 3. each pre-token's bytes are merged into tokens (`models::bpe`);
//! 4. the post-processor may trim the offsets (`processors`).
//!
//! A token's offsets are those of the original characters its bytes come from (a token holding part of
//! a character's bytes spans the whole character; the prepended space is aligned to the segment's first
//! character), then trimmed. The corpus scan's search (`search::byte_level_bpe`) runs the same steps.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::models::bpe::{Bpe, BpeBuffers};
use crate::pre_tokenizers::byte_level::{ByteLevel, Unit, Word};
use crate::processors::trim_offsets::{space_counts, PostProcessor};
use crate::tokenizer::added_vocabulary::{AddedVocabulary, Flags, Piece};
use crate::tokenizer::token::Token;

pub struct ByteLevelBpe {
    pub added: AddedVocabulary,
    pub pre_tokenizer: ByteLevel,
    pub model: Bpe,
    pub post_processor: PostProcessor,
    id_to_token: Vec<Option<String>>,
    /// Leading and trailing spaces of each model token's string (offset trimming).
    spaces: Vec<(u32, u32)>,
}

/// Reusable buffers for tokenizing (one per thread).
#[derive(Default)]
pub struct BpeScratch {
    pub(crate) units: Vec<Unit>,
    pub(crate) words: Vec<Word>,
    pub(crate) bytes: Vec<u8>,
    pub(crate) buffers: BpeBuffers,
    pub(crate) pieces: Vec<(u32, u32, u32)>,
}

impl ByteLevelBpe {
    /// From a parsed tokenizer.json whose model is BPE and whose pre-tokenizer is ByteLevel.
    pub fn from_json(root: &Value) -> Result<Self> {
        let part = |key: &str| root.get(key).unwrap_or(&Value::Null);
        if !part("normalizer").is_null() {
            return Err(Error::unsupported(format!(
                "normalizer {} is not reproduced (byte-level BPE is served without a normaliser)",
                part("normalizer")
            )));
        }
        let pre_tokenizer = ByteLevel::from_json(part("pre_tokenizer"))?;
        let model = Bpe::from_json(part("model"))?;
        let post_processor = PostProcessor::from_json(part("post_processor"))?;
        let added = AddedVocabulary::from_json(root.get("added_tokens"), Flags { strip: true, normalized: true })?;

        let size = model.vocab().chain(added.tokens()).map(|(_, id)| id as usize + 1).max().unwrap_or(0);
        let mut id_to_token = vec![None; size];
        let mut spaces = vec![(0, 0); size];
        for (token, id) in model.vocab() {
            let (leading, trailing) = space_counts(token);
            spaces[id as usize] = (leading as u32, trailing as u32);
            id_to_token[id as usize] = Some(token.to_string());
        }
        for (token, id) in added.tokens() {
            id_to_token[id as usize] = Some(token.to_string());
        }
        Ok(ByteLevelBpe { added, pre_tokenizer, model, post_processor, id_to_token, spaces })
    }

    pub fn vocab_size(&self) -> usize {
        self.id_to_token.len()
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.id_to_token.get(id as usize).and_then(|t| t.as_deref())
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.added.token_to_id(token).or_else(|| self.model.token_to_id(token))
    }

    /// Tokenize `text` (no special tokens added), replacing `out` with tokens with byte offsets into `text`.
    pub fn tokenize(&self, text: &str, scratch: &mut BpeScratch, out: &mut Vec<Token>) {
        out.clear();
        let BpeScratch { units, words, bytes, buffers, pieces } = scratch;
        self.added.split(text, |piece| match piece {
            Piece::Added(id, start, end) => {
                let (start, end) = self.added_span(text, out.len(), start, end);
                out.push(Token { id, start, end });
            }
            Piece::Segment(segment, base) => {
                self.pre_tokenizer.split(segment, units, words);
                for word in words.iter() {
                    word_bytes(segment, word, bytes);
                    pieces.clear();
                    self.model.tokenize(bytes, buffers, pieces);
                    for &(id, a, b) in pieces.iter() {
                        let (start, end) = self.model_span(text, base, segment, word, a, b, id, out.len());
                        out.push(Token { id, start, end });
                    }
                }
            }
        });
    }

    /// The pre-tokens of `text` (one segment: no added-token splitting) as byte ranges, as the
    /// reference's `pre_tokenizer.pre_tokenize_str` reports them (the prepended space alone spans the
    /// first character).
    pub fn pre_tokenize(&self, text: &str) -> Vec<(usize, usize)> {
        let (mut units, mut words) = (Vec::new(), Vec::new());
        self.pre_tokenizer.split(text, &mut units, &mut words);
        let first_char_end = text.chars().next().map_or(0, char::len_utf8);
        words
            .iter()
            .map(|w| {
                let end = if w.prefixed && w.start == w.end { first_char_end } else { w.end as usize };
                (w.start as usize, end)
            })
            .collect()
    }

    /// Offsets of an added token found at `start..end` (spaces it strips included), trimmed.
    #[inline]
    pub(crate) fn added_span(&self, text: &str, index: usize, mut start: usize, mut end: usize) -> (usize, usize) {
        if self.post_processor.trims() {
            // The token's string in the encoding is the text it matched, stripped spaces included.
            self.post_processor.apply(text, index, space_counts(&text[start..end]), &mut start, &mut end);
        }
        (start, end)
    }

    /// Offsets in `text` of the model token `id` made of bytes `a..b` of `word` (units: the prepended
    /// space, if any, then the word's bytes) in `segment` (at `base` in `text`), trimmed.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn model_span(
        &self,
        text: &str,
        base: usize,
        segment: &str,
        word: &Word,
        a: u32,
        b: u32,
        id: u32,
        index: usize,
    ) -> (usize, usize) {
        let prefixed = word.prefixed as u32;
        let byte = |unit: u32| base + word.start as usize + (unit - prefixed) as usize;
        // The prepended space is aligned to the segment's first character.
        let first_char_end = || base + segment.chars().next().map_or(0, char::len_utf8);
        let mut start = if prefixed == 1 && a == 0 { base } else { char_start(text, byte(a)) };
        let mut end = if prefixed == 1 && b == 1 { first_char_end() } else { char_end(text, byte(b - 1)) };
        if self.post_processor.trims() {
            let (leading, trailing) = self.spaces[id as usize];
            self.post_processor.apply(text, index, (leading as usize, trailing as usize), &mut start, &mut end);
        }
        (start, end)
    }
}

/// The bytes of a pre-token, the prepended space included.
#[inline]
pub(crate) fn word_bytes(segment: &str, word: &Word, out: &mut Vec<u8>) {
    out.clear();
    if word.prefixed {
        out.push(b' ');
    }
    out.extend_from_slice(&segment.as_bytes()[word.start as usize..word.end as usize]);
}

/// Start of the character that byte `i` of `text` belongs to.
#[inline]
fn char_start(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// End of the character that byte `i` of `text` belongs to.
#[inline]
fn char_end(text: &str, i: usize) -> usize {
    let mut end = i + 1;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    end
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pre_tokenizers::byte_level::byte_char;

    /// A byte-level BPE tokenizer.json: the 256 byte characters, then `extra` tokens with merges.
    pub(crate) fn tokenizer_json(merges: &[(&str, &str)], add_prefix_space: bool, post: Value) -> Value {
        let mut vocab: serde_json::Map<String, Value> =
            (0..=255u8).map(|b| (byte_char(b).to_string(), Value::from(b as u32 + 3))).collect();
        vocab.insert("<s>".into(), Value::from(0));
        vocab.insert("<mask>".into(), Value::from(1));
        vocab.insert("</s>".into(), Value::from(2));
        for (a, b) in merges {
            let next = vocab.len();
            vocab.entry(format!("{a}{b}")).or_insert(Value::from(next));
        }
        serde_json::json!({
            "added_tokens": [
                {"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 1, "content": "<mask>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
                {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": true}
            ],
            "normalizer": null,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": true, "use_regex": true},
            "post_processor": post,
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab,
                      "merges": merges.iter().map(|(a, b)| format!("{a} {b}")).collect::<Vec<_>>()}
        })
    }

    fn run(t: &ByteLevelBpe, text: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        t.tokenize(text, &mut BpeScratch::default(), &mut out);
        out.iter().map(|k| (t.id_to_token(k.id).unwrap().to_string(), text[k.start..k.end].to_string())).collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    pub(crate) const MERGES: &[(&str, &str)] = &[("Ġ", "c"), ("Ġc", "a"), ("Ġca", "f"), ("e", "s"), ("Ã", "©")];

    #[test]
    fn tokens_and_offsets_of_the_original_characters() {
        let roberta = serde_json::json!({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": true, "add_prefix_space": false});
        let t = ByteLevelBpe::from_json(&tokenizer_json(MERGES, false, Value::Null)).unwrap();
        assert_eq!(
            run(&t, "caf cafés <mask>"),
            pairs(&[
                ("c", "c"),
                ("a", "a"),
                ("f", "f"),
                ("Ġcaf", " caf"),
                ("Ã©", "é"),
                ("s", "s"),
                ("<mask>", " <mask>")
            ])
        );
        // A token holding part of a character's bytes spans the whole character.
        assert_eq!(run(&t, "😀"), pairs(&[("ð", "😀"), ("Ł", "😀"), ("ĺ", "😀"), ("Ģ", "😀")]));
        // Trimmed: the leading space of " caf", and the one <mask> strips (the token's string holds it).
        let t = ByteLevelBpe::from_json(&tokenizer_json(MERGES, false, roberta.clone())).unwrap();
        assert_eq!(run(&t, "x caf <mask>")[1..], pairs(&[("Ġcaf", "caf"), ("<mask>", "<mask>")])[..]);
        // The prepended space: aligned to the first character; kept on the first token when the
        // post-processor adds prefix spaces too, trimmed on later segments' first tokens.
        let t = ByteLevelBpe::from_json(&tokenizer_json(MERGES, true, Value::Null)).unwrap();
        assert_eq!(run(&t, "caf</s>1"), pairs(&[("Ġcaf", "caf"), ("</s>", "</s>"), ("Ġ", "1"), ("1", "1")]));
        let mut with_prefix = roberta;
        with_prefix["add_prefix_space"] = Value::Bool(true);
        let t = ByteLevelBpe::from_json(&tokenizer_json(MERGES, true, with_prefix)).unwrap();
        assert_eq!(run(&t, "caf</s>1"), pairs(&[("Ġcaf", "caf"), ("</s>", "</s>"), ("Ġ", ""), ("1", "1")]));
    }

    #[test]
    fn refuses_what_it_cannot_reproduce() {
        let mut json = tokenizer_json(MERGES, false, Value::Null);
        json["normalizer"] = serde_json::json!({"type": "NFC"});
        assert!(
            matches!(ByteLevelBpe::from_json(&json), Err(Error::UnsupportedTokenizer { reason, .. }) if reason.contains("normalizer"))
        );
        let mut json = tokenizer_json(MERGES, false, Value::Null);
        json["added_tokens"][0]["single_word"] = Value::Bool(true);
        assert!(
            matches!(ByteLevelBpe::from_json(&json), Err(Error::UnsupportedTokenizer { reason, .. }) if reason.contains("single_word"))
        );
        let mut json = tokenizer_json(MERGES, false, Value::Null);
        json["pre_tokenizer"]["use_regex"] = Value::Bool(false);
        assert!(
            matches!(ByteLevelBpe::from_json(&json), Err(Error::UnsupportedTokenizer { reason, .. }) if reason.contains("use_regex"))
        );
    }
}
