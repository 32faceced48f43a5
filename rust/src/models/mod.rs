//! Models: how a word becomes tokens.
//!
//! * `wordpiece`: greedy longest-match-first pieces with a continuing prefix (`##`);
//! * `bpe`: byte-level BPE, merges applied by rank.

pub mod bpe;
pub mod wordpiece;

pub use bpe::Bpe;
pub use wordpiece::WordPiece;
