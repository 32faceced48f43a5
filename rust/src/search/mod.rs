//! qik-find's search: for each target token, a uniform sample of the corpus sentences in which the
//! tokenizer produces it.
//!
//! * `reader`: reading corpus files in batches of lines (gzip members, padding, errors);
//! * `text`: decoding (U+FFFD per invalid sequence) and sentence splitting;
//! * `target`: `TargetSearch`, the target search of the tokenizer's family: `wordpiece` (prefilter,
//!   per-thread word cache) or `byte_level_bpe` (byte prefilter, per-thread pre-token cache);
//! * `sampling`: SplitMix64 priorities and bottom-k samples;
//! * `finder`: the multi-threaded corpus scan (`find_contexts`, `Options`, `Stats`).

pub mod byte_level_bpe;
pub mod finder;
pub mod reader;
pub mod sampling;
pub mod target;
pub mod text;
pub mod wordpiece;

pub use finder::{find_contexts, Found, Options, Stats};
pub use target::{unique_targets, SearchBuffers, TargetSearch};
