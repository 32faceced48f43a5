//! qik-find: for each token of a (new) BERT WordPiece vocabulary, a uniform sample of the corpus
//! sentences in which the tokenizer produces that token, with the token's character span.
//!
//! The semantics are those of the pure-Python backend `bioptimus_hf/qikfind.py` (see docs/qikfind.md);
//! the Python test-suite checks that both give identical output.

pub mod finder;
pub mod sampling;
pub mod text;
pub mod wordpiece;

#[cfg(feature = "python")]
mod python;

pub use finder::{find_contexts, FindError, Found, Options, Stats};
pub use wordpiece::{BertWordPiece, TokenizerError};
