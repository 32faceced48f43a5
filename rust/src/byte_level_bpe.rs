//! `ByteLevelBpe`: a byte-level BPE tokenizer (GPT-2, RoBERTa) assembled from its parts, as Hugging Face
//! `tokenizers` runs a tokenizer.json with no normaliser, a `ByteLevel` pre-tokenizer and a `BPE` model:
//!
//! 1. added tokens are cut out of the text (`added_vocabulary`: `lstrip`, `rstrip` and `normalized`
//!    reproduced, `single_word` refused);
//! 2. each segment between them is cut into pre-tokens (`byte_level`), with a prepended space if
//!    `add_prefix_space`;
//! 3. each pre-token's bytes are merged into tokens (`bpe`);
//! 4. the post-processor may trim the offsets (`post_processor`).
//!
//! A token's offsets are those of the original characters its bytes come from (a token holding part of
//! a character's bytes spans the whole character; the prepended space is aligned to the segment's first
//! character), then trimmed. `BpeSearch` finds the target tokens of a sentence as the corpus scan needs
//! them: a byte-level prefilter, then the same steps with a per-thread cache of each pre-token's target
//! tokens.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use serde_json::Value;

use crate::added_vocabulary::{AddedVocabulary, Flags, Piece};
use crate::bpe::{Bpe, BpeBuffers};
use crate::byte_level::{decode_byte_level, space_counts, ByteLevel, Unit, Word};
use crate::error::{Error, Result};
use crate::hash::FxHashMap;
use crate::post_processor::PostProcessor;
use crate::tokenizer::Token;

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
    units: Vec<Unit>,
    words: Vec<Word>,
    bytes: Vec<u8>,
    buffers: BpeBuffers,
    pieces: Vec<(u32, u32, u32)>,
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
    fn added_span(&self, text: &str, index: usize, mut start: usize, mut end: usize) -> (usize, usize) {
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
    fn model_span(
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
fn word_bytes(segment: &str, word: &Word, out: &mut Vec<u8>) {
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

// ------------------------------------------------------------------------------------------------ search

/// Target tokens of one pre-token: (slot, first unit, end unit, token index within the pre-token).
type WordTargets = Box<[(u32, u32, u32, u32)]>;

/// Per-thread buffers of `BpeSearch::search`.
#[derive(Default)]
pub struct BpeSearchBuffers {
    /// Target tokens of already-seen pre-tokens of up to `MAX_CACHED_BYTES`, by their bytes (cleared at
    /// `MAX_WORDS`).
    cache: FxHashMap<Box<[u8]>, WordTargets>,
    scratch: BpeScratch,
}

const MAX_WORDS: usize = 1 << 20;
/// Longer pre-tokens are not cached (as the reference's own cache): memory stays within a few hundred MB.
const MAX_CACHED_BYTES: usize = 256;

pub struct BpeSearch<'a> {
    pub tokenizer: &'a ByteLevelBpe,
    /// None: every sentence is a candidate (a target can be made of the prepended space alone).
    prefilter: Option<AhoCorasick>,
    slot_of: Vec<u32>,
    /// Slot -> id.
    ids: Vec<u32>,
}

impl<'a> BpeSearch<'a> {
    /// `targets` must be distinct ids of the vocabulary; target i gets slot i.
    pub fn new(tokenizer: &'a ByteLevelBpe, targets: &[u32]) -> Self {
        let mut slot_of = vec![u32::MAX; tokenizer.vocab_size()];
        for (slot, &t) in targets.iter().enumerate() {
            slot_of[t as usize] = slot as u32;
        }
        // A sentence yields a target only if it holds the target's bytes: an added token's content, or a
        // model token's bytes but for a leading space the pre-tokenizer may have prepended. A model token
        // that is not made of byte-level characters is never produced.
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut every_sentence = false;
        for (content, id) in tokenizer.added.tokens() {
            if slot_of[id as usize] != u32::MAX {
                patterns.push(content.as_bytes().to_vec());
            }
        }
        for (token, id) in tokenizer.model.vocab() {
            if slot_of[id as usize] == u32::MAX {
                continue;
            }
            if let Some(mut bytes) = decode_byte_level(token) {
                if tokenizer.pre_tokenizer.add_prefix_space && bytes.first() == Some(&b' ') {
                    bytes.remove(0);
                }
                every_sentence |= bytes.is_empty();
                patterns.push(bytes);
            }
        }
        let prefilter = (!every_sentence).then(|| AhoCorasickBuilder::new().build(&patterns));
        BpeSearch { tokenizer, prefilter, slot_of, ids: targets.to_vec() }
    }

    #[inline]
    fn slot(&self, id: u32) -> u32 {
        self.slot_of.get(id as usize).copied().unwrap_or(u32::MAX)
    }

    /// The target tokens of `sentence`, in order: (slot, start byte, end byte); false (and no hits) when
    /// the prefilter rules the sentence out.
    pub fn search(&self, sentence: &str, buffers: &mut BpeSearchBuffers, hits: &mut Vec<(u32, usize, usize)>) -> bool {
        hits.clear();
        if let Some(prefilter) = &self.prefilter {
            if !prefilter.is_match(sentence.as_bytes()) {
                return false;
            }
        }
        let tokenizer = self.tokenizer;
        let BpeSearchBuffers { cache, scratch } = buffers;
        let BpeScratch { units, bytes, buffers, pieces, .. } = scratch;
        // Only whether a token is the encoding's first matters (offset trimming), and every pre-token and
        // added token has at least one token (all bytes are in the vocabulary).
        let mut first_piece = true;
        tokenizer.added.split(sentence, |piece| match piece {
            Piece::Added(id, start, end) => {
                let slot = self.slot(id);
                if slot != u32::MAX {
                    let (start, end) = tokenizer.added_span(sentence, !first_piece as usize, start, end);
                    hits.push((slot, start, end));
                }
                first_piece = false;
            }
            Piece::Segment(segment, base) => {
                tokenizer.pre_tokenizer.for_each_word(segment, units, |word| {
                    let key: &[u8] = if word.prefixed {
                        word_bytes(segment, &word, bytes);
                        bytes.as_slice()
                    } else {
                        &segment.as_bytes()[word.start as usize..word.end as usize]
                    };
                    let mut emit = |targets: &[(u32, u32, u32, u32)]| {
                        for &(slot, a, b, k) in targets {
                            let index = if first_piece { k as usize } else { 1 };
                            let id = self.ids[slot as usize];
                            let (start, end) = tokenizer.model_span(sentence, base, segment, &word, a, b, id, index);
                            hits.push((slot, start, end));
                        }
                    };
                    match cache.get(key) {
                        Some(targets) => emit(targets),
                        None => {
                            pieces.clear();
                            tokenizer.model.tokenize(key, buffers, pieces);
                            let targets: WordTargets = pieces
                                .iter()
                                .enumerate()
                                .filter_map(|(k, &(id, a, b))| {
                                    let slot = self.slot(id);
                                    (slot != u32::MAX).then_some((slot, a, b, k as u32))
                                })
                                .collect();
                            emit(&targets);
                            if key.len() <= MAX_CACHED_BYTES {
                                if cache.len() >= MAX_WORDS {
                                    cache.clear();
                                }
                                cache.insert(key.into(), targets);
                            }
                        }
                    }
                    first_piece = false;
                });
            }
        });
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::byte_level::byte_char;

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

    const MERGES: &[(&str, &str)] = &[("Ġ", "c"), ("Ġc", "a"), ("Ġca", "f"), ("e", "s"), ("Ã", "©")];

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
    fn search_finds_what_tokenize_yields() {
        let roberta = serde_json::json!({"type": "RobertaProcessing", "trim_offsets": true, "add_prefix_space": true});
        for (prefix, post) in [(false, Value::Null), (true, roberta)] {
            let t = ByteLevelBpe::from_json(&tokenizer_json(MERGES, prefix, post)).unwrap();
            let ids: Vec<u32> = ["Ġcaf", "Ã©", "<mask>", "Ġ", "es"].iter().map(|s| t.token_to_id(s).unwrap()).collect();
            let search = BpeSearch::new(&t, &ids);
            let mut buffers = BpeSearchBuffers::default();
            let long = format!("x{} es", "caf".repeat(200)); // a pre-token too long to cache
            for text in ["caf cafés <mask> es", "cafés", "  <mask>1", "nothing", "</s>es caf", long.as_str()] {
                let mut tokens = Vec::new();
                t.tokenize(text, &mut BpeScratch::default(), &mut tokens);
                let expected: Vec<(u32, usize, usize)> = tokens
                    .iter()
                    .filter_map(|k| ids.iter().position(|&id| id == k.id).map(|slot| (slot as u32, k.start, k.end)))
                    .collect();
                for _ in 0..2 {
                    let mut hits = Vec::new();
                    let candidate = search.search(text, &mut buffers, &mut hits);
                    assert_eq!(hits, expected, "{text}");
                    assert!(candidate || expected.is_empty());
                }
            }
        }
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
