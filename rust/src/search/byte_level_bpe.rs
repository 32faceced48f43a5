//! The byte-level BPE family's target search (`BpeSearch`): which target tokens a sentence yields, and
//! where, as the corpus scan needs them. A byte-level prefilter (an Aho–Corasick automaton over the targets'
//! bytes) skips sentences that cannot yield any; the others go through the tokenizer's own steps
//! (`tokenizer::byte_level_bpe`) with a per-thread cache of each pre-token's target tokens.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use crate::pre_tokenizers::byte_level::decode_byte_level;
use crate::tokenizer::added_vocabulary::Piece;
use crate::tokenizer::byte_level_bpe::{word_bytes, BpeScratch, ByteLevelBpe};
use crate::utils::hash::FxHashMap;

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
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::tokenizer::byte_level_bpe::tests::{tokenizer_json, MERGES};

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
}
