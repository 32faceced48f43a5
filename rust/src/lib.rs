//! qik-find: for each token of a (new) vocabulary, a uniform sample of the corpus sentences in which the
//! tokenizer produces that token, with the token's character span. Two tokenizer families are
//! reproduced exactly: BERT WordPiece and byte-level BPE (GPT-2, RoBERTa); anything else is refused
//! when loading (`Error::UnsupportedTokenizer`, naming the family and the reason).
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
//! | `added_vocabulary` | added tokens (`[MASK]`, `<mask>`, ...) matched on the raw text (`lstrip`, `rstrip`, ...) |
//! | `normalizer` | BERT's normaliser with alignments (clean text, CJK, NFD + canonical reordering, lowercase) |
//! | `pre_tokenizer` | BERT's pre-tokenizer (whitespace, punctuation) |
//! | `wordpiece` | the WordPiece model (greedy longest match) |
//! | `byte_level` | the ByteLevel pre-tokenizer (GPT-2 pattern, byte alphabet) and offset trimming counts |
//! | `bpe` | the BPE model (merges by rank) |
//! | `post_processor` | what a post-processor does to offsets (ByteLevel / RoBERTa `trim_offsets`) |
//! | `byte_level_bpe` | `ByteLevelBpe`: the byte-level BPE tokenizer assembled, and its target search |
//! | `tokenizer` | `Tokenizer` (one family each), `Family`, `BertWordPiece`: loading tokenizer.json / vocab.txt |
//! | `search` | target search: `TargetSearch` per family; WordPiece's prefilter and per-thread word cache |
//! | `sampling` | SplitMix64 priorities and bottom-k samples |
//! | `finder` | the multi-threaded corpus scan (`find_contexts`, `Options`, `Stats`) |
//! | `unicode`, `generated` | character classes and mappings as the reference applies them (generated tables) |
//! | `hash` | the Fx hasher |
//! | `error` | `Error`, the crate's one error type |
//!
//! The CLI (`src/bin/qik-find.rs`) and the Python binding (`src/python.rs`, feature "python") only
//! convert arguments and errors.

pub mod added_vocabulary;
pub mod bpe;
pub mod byte_level;
pub mod byte_level_bpe;
pub mod error;
pub mod finder;
pub mod generated;
pub mod hash;
pub mod normalizer;
pub mod post_processor;
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
pub use tokenizer::{BertWordPiece, Family, Scratch, Token, Tokenizer};
