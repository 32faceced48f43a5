//! The search of the tokenizer's family (`TargetSearch`): which target tokens a sentence yields, and where,
//! for the corpus scan (`finder`) and the binding's `find_targets`. Each family has its own search
//! (`wordpiece`, `byte_level_bpe`); this module dispatches to it.

use crate::error::{Error, Result};
use crate::search::byte_level_bpe::{BpeSearch, BpeSearchBuffers};
use crate::search::wordpiece::{WordPieceSearch, WordPieceSearchBuffers};
use crate::tokenizer::Tokenizer;

/// The distinct target ids of `targets`, in first-seen order; an error for an id outside the vocabulary.
pub fn unique_targets(tokenizer: &Tokenizer, targets: &[u32]) -> Result<Vec<u32>> {
    let mut unique: Vec<u32> = Vec::with_capacity(targets.len());
    for &t in targets {
        if tokenizer.id_to_token(t).is_none() {
            return Err(Error::InvalidArgument(format!("target id {t} is not in the tokenizer's vocabulary")));
        }
        if !unique.contains(&t) {
            unique.push(t);
        }
    }
    Ok(unique)
}

/// Per-thread buffers of `TargetSearch::search`.
#[derive(Default)]
pub struct SearchBuffers {
    pub wordpiece: WordPieceSearchBuffers,
    pub bpe: BpeSearchBuffers,
}

/// The search of the tokenizer's family.
pub enum TargetSearch<'a> {
    WordPiece(WordPieceSearch<'a>),
    ByteLevelBpe(BpeSearch<'a>),
}

impl<'a> TargetSearch<'a> {
    /// `targets` must be distinct ids of the vocabulary (`unique_targets`); target i gets slot i.
    pub fn new(tokenizer: &'a Tokenizer, targets: &[u32]) -> Self {
        match tokenizer {
            Tokenizer::WordPiece(t) => TargetSearch::WordPiece(WordPieceSearch::new(t, targets)),
            Tokenizer::ByteLevelBpe(t) => TargetSearch::ByteLevelBpe(BpeSearch::new(t, targets)),
        }
    }

    /// The target tokens of `sentence` as the corpus scan sees them, in order: (slot, start byte, end
    /// byte); false (and no hits) when the prefilter rules the sentence out.
    #[inline]
    pub fn search(&self, sentence: &str, buffers: &mut SearchBuffers, hits: &mut Vec<(u32, usize, usize)>) -> bool {
        match self {
            TargetSearch::WordPiece(search) => search.search(sentence, &mut buffers.wordpiece, hits),
            TargetSearch::ByteLevelBpe(search) => search.search(sentence, &mut buffers.bpe, hits),
        }
    }
}
