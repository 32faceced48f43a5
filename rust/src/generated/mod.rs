//! Tables written by `scripts/generate_unicode_tables.py`; never edited by hand (docs/qikfind.md,
//! "Unicode policy").
//!
//! * `bert_unicode`: what the Hugging Face `tokenizers` library (the reference) does with each code
//!   point: White_Space, lowercase mapping, canonical decompositions, combining class order.
//! * `byte_level_classes`: the letters, numbers and whitespace of the GPT-2 pattern as the reference's
//!   `ByteLevel` pre-tokenizer (its regex engine) classifies them.
//! * `sentence_classes`: the sentence splitter's White_Space and Uppercase, the same code points as
//!   `bioptimus_hf/vocabulary/_sentence_classes.py`.

#[rustfmt::skip]
pub mod bert_unicode;
#[rustfmt::skip]
pub mod byte_level_classes;
#[rustfmt::skip]
pub mod sentence_classes;
