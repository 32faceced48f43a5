//! The tokenizer families qik-find reproduces, and which family a tokenizer.json belongs to (or why none
//! here reproduces it: `Error::UnsupportedTokenizer` naming the family and the reason).

use serde_json::Value;

use crate::error::{Error, Result};

/// The tokenizer families the Rust backend serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    WordPiece,
    ByteLevelBpe,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::WordPiece => "WordPiece",
            Family::ByteLevelBpe => "byte-level BPE",
        }
    }

    /// What the family is made of, in a tokenizer.json.
    pub fn description(self) -> &'static str {
        match self {
            Family::WordPiece => "BertNormalizer + BertPreTokenizer + WordPiece",
            Family::ByteLevelBpe => "no normalizer + ByteLevel pre-tokenizer (GPT-2 pattern) + BPE",
        }
    }
}

fn type_of(part: &Value) -> &str {
    match part {
        Value::Null => "none",
        _ => part.get("type").and_then(Value::as_str).unwrap_or("untyped"),
    }
}

/// Which family a tokenizer.json belongs to, or why none here reproduces it.
pub fn family_of(root: &Value) -> Result<Family> {
    let model = root.get("model").unwrap_or(&Value::Null);
    let pre_tokenizer = root.get("pre_tokenizer").unwrap_or(&Value::Null);
    // tokenizer.json files from old versions may leave the model untyped: its fields tell.
    let model_type = match model.get("type").and_then(Value::as_str) {
        Some(t) => t,
        None if model.get("merges").is_some() => "BPE",
        None if model.get("max_input_chars_per_word").is_some() => "WordPiece",
        None if model.get("vocab").map_or(false, Value::is_array) => "Unigram",
        None => "untyped",
    };
    let pre_type = type_of(pre_tokenizer);
    let contains = |name: &str| {
        pre_type == name
            || pre_tokenizer
                .get("pretokenizers")
                .and_then(Value::as_array)
                .map_or(false, |items| items.iter().any(|p| type_of(p) == name))
    };
    let unsupported = |family: String, reason: String| Err(Error::UnsupportedTokenizer { family, reason });
    let served = "the Rust backend serves WordPiece (BertNormalizer + BertPreTokenizer) and byte-level BPE \
                  (ByteLevel pre-tokenizer)";
    match model_type {
        "WordPiece" => Ok(Family::WordPiece),
        "BPE" if pre_type == "ByteLevel" => Ok(Family::ByteLevelBpe),
        "BPE" if contains("ByteLevel") => unsupported(
            "byte-level BPE with a custom split".into(),
            format!("pre_tokenizer {pre_type} (a ByteLevel step after other splits, as Llama 3 or Qwen) is not reproduced; {served}"),
        ),
        "BPE" if contains("Metaspace") || model.get("byte_fallback").and_then(Value::as_bool) == Some(true) => unsupported(
            "SentencePiece BPE".into(),
            format!("Metaspace pre-tokenizer / byte fallback are not implemented; {served}"),
        ),
        "BPE" => unsupported(format!("BPE with pre_tokenizer {pre_type}"), format!("not implemented; {served}")),
        "Unigram" => unsupported(
            if contains("Metaspace") { "SentencePiece Unigram".into() } else { "Unigram".into() },
            format!("the Unigram model is not implemented; {served}"),
        ),
        other => unsupported(format!("{other} model"), format!("not implemented; {served}")),
    }
}
