//! qik-find: for each token of a (new) BERT WordPiece vocabulary, a uniform sample of the corpus
//! sentences in which the tokenizer produces that token, with the token's character span.
//!
//! The semantics are those of the pure-Python backend `bioptimus_hf/vocabulary/qikfind.py` (see
//! docs/qikfind.md); the Python test-suite checks that both give identical output.
//!
//! Modules, in the order of the pipeline (the tokenizer modules follow Hugging Face `tokenizers`):
//!
//! | module | what it owns |
//! |---|---|
//! | `reader` | reading corpus files in batches of lines; gzip members, padding, errors |
//! | `text` | decoding (U+FFFD per invalid sequence) and sentence splitting |
//! | `added_vocabulary` | added tokens (`[MASK]`, ...) matched on the raw text |
//! | `normalizer` | BERT's normaliser with alignments (clean text, CJK, NFD + canonical reordering, lowercase) |
//! | `pre_tokenizer` | BERT's pre-tokenizer (whitespace, punctuation) |
//! | `wordpiece` | the WordPiece model (greedy longest match) |
//! | `tokenizer` | `BertWordPiece`: loading tokenizer.json / vocab.txt, the four parts assembled |
//! | `search` | target search: Aho–Corasick prefilter, target pieces with a per-thread word cache |
//! | `sampling` | SplitMix64 priorities and bottom-k samples |
//! | `finder` | the multi-threaded corpus scan (`find_contexts`, `Options`, `Stats`) |
//! | `unicode`, `generated` | character classes and mappings as the reference applies them (generated tables) |
//! | `hash` | the Fx hasher |
//! | `error` | `Error`, the crate's one error type |
//!
//! The CLI (`src/bin/qik-find.rs`) and the Python binding (`src/python.rs`, feature "python") only
//! convert arguments and errors.

pub mod added_vocabulary;
pub mod error;
pub mod finder;
pub mod generated;
pub mod hash;
pub mod normalizer;
pub mod pre_tokenizer;
pub mod reader;
pub mod sampling;
pub mod search;
pub mod text;
pub mod tokenizer;
pub mod unicode;
pub mod wordpiece;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};
pub use finder::{find_contexts, Found, Options, Stats};
pub use tokenizer::{BertWordPiece, Scratch, Token};
