//! The tokenizers qik-find reproduces, one per family, behind `Tokenizer`:
//!
//! * `BertWordPiece` (`bert_wordpiece`): the BERT tokenizer (BertNormalizer + BertPreTokenizer + WordPiece);
//! * `ByteLevelBpe` (`byte_level_bpe`): GPT-2 / RoBERTa style byte-level BPE.
//!
//! Each family assembles the parts a tokenizer.json names (`normalizers`, `pre_tokenizers`, `models`,
//! `processors`) around the added tokens (`added_vocabulary`), as Hugging Face `tokenizers` runs them.
//! Anything else is refused when loading, with `Error::UnsupportedTokenizer` naming the family and the
//! reason (`family`; the `tokenizers` crate itself is not packaged for offline builds here, so every family
//! is a re-implementation, and only what is reproduced exactly is served).

pub mod added_vocabulary;
pub mod bert_wordpiece;
pub mod byte_level_bpe;
pub mod family;
pub mod token;

pub use bert_wordpiece::{BertWordPiece, WordPieceScratch};
pub use byte_level_bpe::{BpeScratch, ByteLevelBpe};
pub use family::Family;
pub use token::Token;

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::tokenizer::family::family_of;

/// A tokenizer of one of the families qik-find reproduces.
pub enum Tokenizer {
    WordPiece(BertWordPiece),
    ByteLevelBpe(ByteLevelBpe),
}

impl Tokenizer {
    /// From the text of a tokenizer.json; `Error::UnsupportedTokenizer` (family and reason) for what
    /// no family here reproduces.
    pub fn from_tokenizer_json(json: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(json)
            .map_err(|e| Error::InvalidTokenizer(format!("tokenizer.json is not valid JSON: {e}")))?;
        let family = family_of(&root)?;
        match family {
            Family::WordPiece => BertWordPiece::from_value(&root).map(Tokenizer::WordPiece),
            Family::ByteLevelBpe => ByteLevelBpe::from_json(&root).map(Tokenizer::ByteLevelBpe),
        }
        .map_err(|e| e.in_family(family.name()))
    }

    /// From a tokenizer directory (or a tokenizer.json file): tokenizer.json if present, else a BERT
    /// vocab.txt (see `BertWordPiece::from_dir`).
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let json_path = if dir.is_file() { dir.to_path_buf() } else { dir.join("tokenizer.json") };
        if json_path.is_file() {
            let text = std::fs::read_to_string(&json_path).map_err(|e| Error::io(&json_path, e))?;
            return Self::from_tokenizer_json(&text).map_err(|e| e.in_file(&json_path));
        }
        BertWordPiece::from_dir(dir).map(Tokenizer::WordPiece)
    }

    pub fn family(&self) -> Family {
        match self {
            Tokenizer::WordPiece(_) => Family::WordPiece,
            Tokenizer::ByteLevelBpe(_) => Family::ByteLevelBpe,
        }
    }

    pub fn vocab_size(&self) -> usize {
        match self {
            Tokenizer::WordPiece(t) => t.vocab_size(),
            Tokenizer::ByteLevelBpe(t) => t.vocab_size(),
        }
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        match self {
            Tokenizer::WordPiece(t) => t.id_to_token(id),
            Tokenizer::ByteLevelBpe(t) => t.id_to_token(id),
        }
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            Tokenizer::WordPiece(t) => t.token_to_id(token),
            Tokenizer::ByteLevelBpe(t) => t.token_to_id(token),
        }
    }

    /// Tokenize `text` (no special tokens added), replacing `out` with tokens with byte offsets into `text`.
    pub fn tokenize(&self, text: &str, scratch: &mut Scratch, out: &mut Vec<Token>) {
        match self {
            Tokenizer::WordPiece(t) => t.tokenize(text, &mut scratch.wordpiece, out),
            Tokenizer::ByteLevelBpe(t) => t.tokenize(text, &mut scratch.bpe, out),
        }
    }

    /// The normalised text (WordPiece: the BertNormalizer's output; byte-level BPE has no normaliser).
    pub fn normalize_str(&self, text: &str) -> String {
        match self {
            Tokenizer::WordPiece(t) => t.normalize_str(text),
            Tokenizer::ByteLevelBpe(_) => text.to_string(),
        }
    }
}

/// Reusable buffers for tokenizing (one per thread), for either family.
#[derive(Default)]
pub struct Scratch {
    pub wordpiece: WordPieceScratch,
    pub bpe: BpeScratch,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_named_when_served_and_when_refused() {
        let family = |json: serde_json::Value| match Tokenizer::from_tokenizer_json(&json.to_string()) {
            Ok(t) => Ok(t.family().name().to_string()),
            Err(Error::UnsupportedTokenizer { family, reason }) => Err((family, reason)),
            Err(other) => panic!("{other}"),
        };
        let bpe = crate::tokenizer::byte_level_bpe::tests::tokenizer_json(&[("a", "b")], true, Value::Null);
        assert_eq!(family(bpe.clone()), Ok("byte-level BPE".to_string()));
        let mut metaspace = bpe.clone();
        metaspace["pre_tokenizer"] = serde_json::json!({"type": "Metaspace", "replacement": "▁"});
        let (name, reason) = family(metaspace).unwrap_err();
        assert_eq!(name, "SentencePiece BPE");
        assert!(reason.contains("Metaspace") && reason.contains("serves WordPiece"), "{reason}");
        let mut llama3 = bpe.clone();
        llama3["pre_tokenizer"] = serde_json::json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "x"}}, {"type": "ByteLevel", "use_regex": false}]});
        assert_eq!(family(llama3).unwrap_err().0, "byte-level BPE with a custom split");
        let mut dropout = bpe.clone();
        dropout["model"]["dropout"] = serde_json::json!(0.1);
        let (name, reason) = family(dropout).unwrap_err();
        assert_eq!((name.as_str(), reason.contains("dropout")), ("byte-level BPE", true));
        let unigram = serde_json::json!({"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "Unigram", "vocab": [["a", 0.0]]}});
        assert_eq!(family(unigram).unwrap_err().0, "SentencePiece Unigram");
        let untyped = serde_json::json!({"model": {"vocab": [["a", 0.0]]}});
        assert_eq!(family(untyped).unwrap_err().0, "Unigram");
        let word_level = serde_json::json!({"model": {"type": "WordLevel", "vocab": {"a": 0}}});
        assert_eq!(family(word_level).unwrap_err().0, "WordLevel model");
        // WordPiece with a post-processor that trims offsets: refused.
        let vocab: serde_json::Map<String, Value> = [("[UNK]".to_string(), Value::from(0))].into_iter().collect();
        let trimming = serde_json::json!({"normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "ByteLevel", "trim_offsets": true}, "model": {"type": "WordPiece", "vocab": vocab}});
        let (name, reason) = family(trimming).unwrap_err();
        assert_eq!((name.as_str(), reason.contains("trims offsets")), ("WordPiece", true));
    }
}
