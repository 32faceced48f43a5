//! What a tokenizer.json's post-processor does to the offsets of an encoding without special tokens:
//! `ByteLevel` and `RobertaProcessing` with `trim_offsets` trim them (the reference's
//! `process_offsets`), also when no special token is added; `TemplateProcessing` and `BertProcessing`
//! leave them alone; a `Sequence` applies its processors in order.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::utils::unicode::is_whitespace;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostProcessor {
    /// One entry per trimming processor, in order: its `add_prefix_space`.
    trims: Vec<bool>,
}

impl PostProcessor {
    /// From the `post_processor` object of a tokenizer.json (null: none).
    pub fn from_json(processor: &Value) -> Result<Self> {
        let mut trims = Vec::new();
        collect(processor, &mut trims)?;
        Ok(PostProcessor { trims })
    }

    /// Whether offsets are trimmed at all.
    pub fn trims(&self) -> bool {
        !self.trims.is_empty()
    }

    /// Trim the offsets `start..end` (byte offsets at character boundaries of `text`) of the token at
    /// `index` in the encoding, whose string has `leading` / `trailing` spaces (`space_counts`).
    /// The reference trims character offsets; stepping over characters of `text` does the same on bytes.
    pub fn apply(
        &self,
        text: &str,
        index: usize,
        (leading, trailing): (usize, usize),
        start: &mut usize,
        end: &mut usize,
    ) {
        if leading == 0 && trailing == 0 {
            return;
        }
        for &add_prefix_space in &self.trims {
            if leading > 0 {
                let is_first = index == 0 || *start == 0;
                let skip = if is_first && add_prefix_space && leading == 1 { 0 } else { leading };
                // min(start + skip, end), in characters
                *start = text[*start..*end].char_indices().nth(skip).map_or(*end, |(i, _)| *start + i);
            }
            if trailing > 0 {
                // only when end (in characters) >= trailing: then max(end - trailing, start)
                if let Some((i, _)) = text[..*end].char_indices().rev().nth(trailing - 1) {
                    *end = i.max(*start);
                }
            }
        }
    }
}

/// Leading and trailing characters of a token's string that the reference's offset trimming counts as
/// spaces: 'Ġ' (the byte-level space) or whitespace (`char::is_whitespace` as the reference sees it).
pub fn space_counts(token: &str) -> (usize, usize) {
    let is_space = |c: &char| *c == 'Ġ' || is_whitespace(*c);
    let leading = token.chars().take_while(is_space).count();
    let trailing = token.chars().rev().take_while(is_space).count();
    (leading, trailing)
}

fn collect(processor: &Value, trims: &mut Vec<bool>) -> Result<()> {
    let kind = match processor {
        Value::Null => return Ok(()),
        _ => processor.get("type").and_then(Value::as_str).unwrap_or(""),
    };
    let flag = |key: &str, default: bool| match processor.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Error::InvalidTokenizer(format!("`{key}` should be a boolean, got {other}"))),
    };
    match kind {
        "ByteLevel" | "RobertaProcessing" => {
            if flag("trim_offsets", true)? {
                trims.push(flag("add_prefix_space", true)?);
            }
        }
        "TemplateProcessing" | "BertProcessing" => {}
        "Sequence" => {
            for inner in processor.get("processors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
                collect(inner, trims)?;
            }
        }
        _ => return Err(Error::unsupported(format!("post_processor {processor} is not reproduced"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trim(
        p: &PostProcessor,
        text: &str,
        index: usize,
        spaces: (usize, usize),
        span: (usize, usize),
    ) -> (usize, usize) {
        let (mut start, mut end) = span;
        p.apply(text, index, spaces, &mut start, &mut end);
        (start, end)
    }

    #[test]
    fn trims_like_the_reference() {
        let p = PostProcessor::from_json(
            &serde_json::json!({"type": "RobertaProcessing", "trim_offsets": true, "add_prefix_space": true}),
        )
        .unwrap();
        // "Ġ" that the pre-tokenizer prepended, first token: leading kept, trailing trimmed (the token is only a space).
        assert_eq!(trim(&p, "1", 0, (1, 1), (0, 1)), (0, 0));
        assert_eq!(trim(&p, "a b", 1, (1, 0), (1, 3)), (2, 3));
        assert_eq!(trim(&p, "  <mask>", 0, (2, 0), (0, 8)), (2, 8));
        // Characters, not bytes.
        assert_eq!(trim(&p, "é ég", 1, (1, 0), (2, 6)), (3, 6));
        assert_eq!(trim(&p, "x é", 1, (0, 2), (1, 4)), (1, 1));
        let none = PostProcessor::from_json(&serde_json::json!({"type": "ByteLevel", "trim_offsets": false})).unwrap();
        assert!(!none.trims());
        assert_eq!(trim(&none, "a b", 1, (1, 0), (1, 3)), (1, 3));
        let seq = PostProcessor::from_json(&serde_json::json!({"type": "Sequence", "processors": [
            {"type": "ByteLevel", "trim_offsets": true, "add_prefix_space": false}, {"type": "TemplateProcessing"}]}))
        .unwrap();
        assert_eq!(trim(&seq, "a", 0, (1, 0), (0, 1)), (1, 1));
        assert!(matches!(
            PostProcessor::from_json(&serde_json::json!({"type": "Mystery"})),
            Err(Error::UnsupportedTokenizer { .. })
        ));
        assert_eq!(space_counts("ĠĠa Ġ"), (2, 2));
        assert_eq!(space_counts(" <mask>  "), (1, 2));
    }
}
