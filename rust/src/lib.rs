//! qik-find: for each token of a (new) vocabulary, a uniform sample of the corpus sentences in which the
//! tokenizer produces that token, with the token's character span. Two tokenizer families are
//! reproduced exactly: BERT WordPiece and byte-level BPE (GPT-2, RoBERTa); anything else is refused
//! when loading (`Error::UnsupportedTokenizer`, naming the family and the reason).
//!
//! The semantics are those of the pure-Python backend `bioptimus_hf/vocabulary/qikfind.py` (see
//! docs/qikfind.md); the Python test-suite checks that both give identical output.
//!
//! Modules, laid out as Hugging Face `tokenizers` lays out its own, lower ones first (a module only uses
//! modules below it or beside it, never one that uses it back: tests/test_rust_layout.py):
//!
//! | module | what it owns |
//! |---|---|
//! | `error` | `Error`, the crate's one error type |
//! | `utils` | the Fx hasher; character classes and mappings as the reference applies them |
//! | `generated` | the tables those classes are read from (scripts/generate_unicode_tables.py) |
//! | `normalizers` | BERT's normaliser with alignments (clean text, CJK, NFD + canonical reordering, lowercase) |
//! | `pre_tokenizers` | BERT's pre-tokenizer (whitespace, punctuation); `ByteLevel` (GPT-2 pattern, byte alphabet) |
//! | `models` | WordPiece (greedy longest match); BPE (merges by rank) |
//! | `processors` | what a post-processor does to offsets (ByteLevel / RoBERTa `trim_offsets`) |
//! | `tokenizer` | `Tokenizer` (one family each): `BertWordPiece`, `ByteLevelBpe`, the added vocabulary, `Family` |
//! | `search` | the corpus scan: reader, sentence splitting, each family's target search, sampling, `find_contexts` |
//!
//! The CLI (`src/bin/qik-find.rs`) and the Python binding (its own crate, `bindings/python`) only convert
//! arguments and errors.

pub mod error;
pub mod generated;
pub mod models;
pub mod normalizers;
pub mod pre_tokenizers;
pub mod processors;
pub mod search;
pub mod tokenizer;
pub mod utils;

pub use error::{Error, Result};
pub use search::finder::{find_contexts, Found, Options, Stats};
pub use tokenizer::{BertWordPiece, Family, Scratch, Token, Tokenizer};
