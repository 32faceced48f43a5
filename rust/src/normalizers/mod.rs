//! Normalisers: what a tokenizer.json's `normalizer` does to a segment's text, with the alignment of every
//! normalised byte to the original text. `bert`: BERT's `BertNormalizer` (the one the WordPiece family
//! uses; the byte-level BPE family has none).

pub mod bert;

pub use bert::{BertNormalizer, Normalized};
