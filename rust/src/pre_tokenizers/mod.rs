//! Pre-tokenizers: how a normalised segment is cut into words before the model sees them.
//!
//! * `bert`: BERT's `BertPreTokenizer` (whitespace, punctuation), and its ASCII fast path;
//! * `byte_level`: GPT-2's `ByteLevel` (the GPT-2 pattern, a prepended space) and the byte-level alphabet.

pub mod bert;
pub mod byte_level;

pub use bert::BertPreTokenizer;
pub use byte_level::ByteLevel;
