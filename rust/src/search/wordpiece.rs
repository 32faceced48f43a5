//! The WordPiece family's target search: which target tokens a sentence yields, and where, as fast as the
//! corpus scan needs.
//!
//! * `Prefilter`: an Aho–Corasick automaton over the targets' surface strings (without `##`) skips
//!   sentences that cannot produce any target: searched on the raw sentence when it is plain ASCII, on
//!   its normalised text otherwise. Exact: it only ever says "no" when tokenizing would.
//! * `WordPieceSearch::find`: the same tokens as `BertWordPiece::tokenize`, keeping only targets; each
//!   distinct word is cut into pieces once per `WordCache`, and plain ASCII sentences skip the
//!   alignment bookkeeping (byte offsets are character offsets there).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use crate::models::wordpiece::PieceBuffers;
use crate::pre_tokenizers::bert::is_plain_ascii;
use crate::tokenizer::added_vocabulary::Piece;
use crate::tokenizer::bert_wordpiece::{BertWordPiece, WordPieceScratch};
use crate::utils::hash::FxHashMap;

pub struct Prefilter {
    /// None: every sentence is a candidate (`[UNK]` is a target: it has no surface).
    automaton: Option<AhoCorasick>,
}

impl Prefilter {
    pub fn new(tokenizer: &BertWordPiece, targets: &[u32]) -> Self {
        let mut patterns = Vec::with_capacity(targets.len());
        for &id in targets {
            if id == tokenizer.model.unk_id {
                return Prefilter { automaton: None };
            }
            let token = match tokenizer.id_to_token(id) {
                Some(token) => token,
                None => continue,
            };
            if tokenizer.is_added_token(id) {
                patterns.push(token.to_string());
            } else {
                let prefix = tokenizer.model.continuing_prefix.as_str();
                patterns.push(token.strip_prefix(prefix).unwrap_or(token).to_string());
            }
        }
        let automaton =
            AhoCorasickBuilder::new().ascii_case_insensitive(tokenizer.normalizer.lowercase).build(&patterns);
        Prefilter { automaton: Some(automaton) }
    }

    /// Whether `sentence` may contain a target. `normalized` is a reusable buffer.
    #[inline]
    pub fn is_candidate(
        &self,
        tokenizer: &BertWordPiece,
        sentence: &str,
        plain_ascii: bool,
        normalized: &mut String,
    ) -> bool {
        let automaton = match &self.automaton {
            Some(automaton) => automaton,
            None => return true,
        };
        // Printable ASCII with tab/newline/CR normalises to itself lowercased (whitespace to spaces,
        // which no vocabulary piece contains): search the raw bytes, ASCII-case-insensitively when the
        // tokenizer lowercases.
        let raw_match = automaton.is_match(sentence);
        if raw_match || plain_ascii {
            return raw_match;
        }
        // Segment by segment, as the tokenizer normalises (canonical reordering never crosses an
        // added token); added tokens as they are. Matches across a boundary only add candidates.
        normalized.clear();
        tokenizer.added.split(sentence, |piece| match piece {
            Piece::Segment(segment, _) => tokenizer.normalizer.normalize_str(segment, normalized),
            Piece::Added(_, start, end) => normalized.push_str(&sentence[start..end]),
        });
        automaton.is_match(normalized.as_str())
    }
}

/// (target slot, first char, end char) of the target pieces of one word.
type WordTargets = Box<[(u32, u32, u32)]>;

/// Target pieces of already-seen normalised words (per thread, per scan).
#[derive(Default)]
pub struct WordCache {
    map: FxHashMap<Box<str>, WordTargets>,
}

impl WordCache {
    /// Cleared when it holds this many words: bounded memory on corpora with huge vocabularies.
    const MAX_WORDS: usize = 1 << 20;
}

/// Per-thread buffers of `WordPieceSearch::search`.
#[derive(Default)]
pub struct WordPieceSearchBuffers {
    pub cache: WordCache,
    pub scratch: WordPieceScratch,
    /// The normalised sentence, for the prefilter.
    pub normalized: String,
    /// An ASCII word lowercased, for the cache.
    pub lowered: String,
}

/// The targets of a WordPiece scan: `slot_of[id]` is the target's slot (position in the scan's target
/// list), `u32::MAX` for other ids.
pub struct WordPieceSearch<'a> {
    pub tokenizer: &'a BertWordPiece,
    pub prefilter: Prefilter,
    slot_of: Vec<u32>,
}

impl<'a> WordPieceSearch<'a> {
    /// `targets` must be distinct ids of the vocabulary; target i gets slot i.
    pub fn new(tokenizer: &'a BertWordPiece, targets: &[u32]) -> Self {
        let mut slot_of = vec![u32::MAX; tokenizer.vocab_size()];
        for (slot, &t) in targets.iter().enumerate() {
            slot_of[t as usize] = slot as u32;
        }
        WordPieceSearch { tokenizer, prefilter: Prefilter::new(tokenizer, targets), slot_of }
    }

    #[inline]
    fn slot(&self, id: u32) -> u32 {
        self.slot_of.get(id as usize).copied().unwrap_or(u32::MAX)
    }

    /// The target tokens of `sentence` as the corpus scan sees them, in order: (slot, start byte, end
    /// byte); false (and no hits) when the prefilter rules the sentence out.
    pub fn search(
        &self,
        sentence: &str,
        buffers: &mut WordPieceSearchBuffers,
        hits: &mut Vec<(u32, usize, usize)>,
    ) -> bool {
        hits.clear();
        let plain_ascii = is_plain_ascii(sentence);
        if !self.prefilter.is_candidate(self.tokenizer, sentence, plain_ascii, &mut buffers.normalized) {
            return false;
        }
        self.find(sentence, plain_ascii, buffers, hits);
        true
    }

    /// The target tokens of `sentence`, in order: (slot, start byte, end byte).
    pub fn find(
        &self,
        sentence: &str,
        plain_ascii: bool,
        buffers: &mut WordPieceSearchBuffers,
        hits: &mut Vec<(u32, usize, usize)>,
    ) {
        hits.clear();
        self.tokenizer.added.split(sentence, |piece| match piece {
            Piece::Added(id, start, end) => {
                let slot = self.slot(id);
                if slot != u32::MAX {
                    hits.push((slot, start, end));
                }
            }
            Piece::Segment(segment, base) => self.segment_targets(segment, base, plain_ascii, buffers, hits),
        });
    }

    fn segment_targets(
        &self,
        segment: &str,
        base: usize,
        plain_ascii: bool,
        buffers: &mut WordPieceSearchBuffers,
        hits: &mut Vec<(u32, usize, usize)>,
    ) {
        let tokenizer = self.tokenizer;
        let WordPieceSearchBuffers { cache, scratch, lowered, .. } = buffers;
        if plain_ascii {
            let WordPieceScratch { buffers, pieces, .. } = scratch;
            tokenizer.pre_tokenizer.split_ascii(segment, |start, end| {
                let word = &segment[start..end];
                let key: &str = if tokenizer.normalizer.lowercase && word.bytes().any(|c| c.is_ascii_uppercase()) {
                    lowered.clear();
                    lowered.push_str(word);
                    lowered.make_ascii_lowercase();
                    lowered
                } else {
                    word
                };
                let offset = base + start;
                self.word_targets(key, end - start, cache, buffers, pieces, |slot, a, b| {
                    hits.push((slot, offset + a as usize, offset + b as usize))
                });
            });
            return;
        }
        tokenizer.normalize_and_split(segment, base, scratch);
        let WordPieceScratch { normalized, words, buffers, pieces, .. } = scratch;
        for &(first, last) in words.iter() {
            let (first, last) = (first as usize, last as usize);
            let align = &normalized.align;
            self.word_targets(normalized.slice(first, last), last - first, cache, buffers, pieces, |slot, a, b| {
                hits.push((slot, align[first + a as usize].0 as usize, align[first + b as usize - 1].1 as usize))
            });
        }
    }

    fn word_targets<F: FnMut(u32, u32, u32)>(
        &self,
        word: &str,
        n_chars: usize,
        cache: &mut WordCache,
        buffers: &mut PieceBuffers,
        pieces: &mut Vec<(u32, u32, u32)>,
        mut emit: F,
    ) {
        if let Some(found) = cache.map.get(word) {
            for &(slot, a, b) in found.iter() {
                emit(slot, a, b);
            }
            return;
        }
        pieces.clear();
        self.tokenizer.model.pieces(word, n_chars, buffers, pieces);
        let found: WordTargets = pieces
            .iter()
            .filter_map(|&(id, a, b)| {
                let slot = self.slot(id);
                (slot != u32::MAX).then_some((slot, a, b))
            })
            .collect();
        for &(slot, a, b) in found.iter() {
            emit(slot, a, b);
        }
        if cache.map.len() >= WordCache::MAX_WORDS {
            cache.map.clear();
        }
        cache.map.insert(word.into(), found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::token::Token;

    fn tokenizer() -> BertWordPiece {
        let json = serde_json::json!({
            "added_tokens": [{"id": 4, "content": "[MASK]", "special": true}],
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "[UNK]": 1, "cafe": 2, "##s": 3, "[MASK]": 4,
                      "x": 5, "a": 6, "##b": 7, "中": 8, ".": 9, "is": 10, "##tan": 11, "##bul": 12}}
        });
        BertWordPiece::from_tokenizer_json(&json.to_string()).unwrap()
    }

    /// Target search gives the target tokens of `tokenize`, on ASCII and non-ASCII text, with a cache.
    #[test]
    fn finds_the_targets_that_tokenize_yields() {
        let t = tokenizer();
        let targets = [2, 3, 4, 7, 8, 11];
        let search = WordPieceSearch::new(&t, &targets);
        let mut buffers = WordPieceSearchBuffers::default();
        for text in ["Cafes x[MASK]ab.", "Cafés x中 ab İstanbul", "CAFE\u{301}S ab[MASK]", "nothing here"] {
            let mut tokens: Vec<Token> = Vec::new();
            t.tokenize(text, &mut WordPieceScratch::default(), &mut tokens);
            let expected: Vec<(u32, usize, usize)> = tokens
                .iter()
                .filter_map(|k| targets.iter().position(|&id| id == k.id).map(|slot| (slot as u32, k.start, k.end)))
                .collect();
            for _ in 0..2 {
                let mut hits = Vec::new();
                search.find(text, is_plain_ascii(text), &mut buffers, &mut hits);
                assert_eq!(hits, expected, "{text}");
            }
            let mut normalized = String::new();
            assert_eq!(
                search.prefilter.is_candidate(&t, text, is_plain_ascii(text), &mut normalized),
                !expected.is_empty()
            );
        }
    }
}
