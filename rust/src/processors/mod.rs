//! Post-processors: qik-find adds no special tokens, so all it takes from a tokenizer.json's
//! `post_processor` is what it does to offsets (`trim_offsets`: `ByteLevel`, `RobertaProcessing`).

pub mod trim_offsets;

pub use trim_offsets::PostProcessor;
