//! Added tokens (special tokens such as `[MASK]`, `<mask>`) matched on the text before the model sees
//! it, leftmost-longest; the text between them is normalised and pre-tokenized segment by segment.
//!
//! As the reference (`AddedVocabulary::extract_and_normalize`): tokens with `normalized: false` are cut
//! out of the raw text first; tokens with `normalized: true` are then cut out of each remaining segment's
//! normalised text. `lstrip` / `rstrip` make a token's span take the whitespace (Unicode White_Space, the
//! `regex` crate's `\s`) before / after it, never reaching back into the previous match. The token's span
//! is the one reported, spaces included.
//!
//! Which flags a family may use is the caller's choice (`Flags`): the WordPiece family takes none (its
//! normalised text is not the raw text), the byte-level BPE family, which has no normaliser, all but
//! `single_word`.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::utils::unicode::is_space;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedToken {
    pub content: String,
    pub id: u32,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
}

/// The added-token flags a tokenizer family reproduces.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    /// `lstrip`, `rstrip`.
    pub strip: bool,
    /// `normalized: true` (matched after the normaliser: only exact where there is none).
    pub normalized: bool,
}

struct Matcher {
    automaton: AhoCorasick,
    /// Pattern index -> token index.
    tokens: Vec<usize>,
}

pub struct AddedVocabulary {
    tokens: Vec<AddedToken>,
    raw: Option<Matcher>,
    normalized: Option<Matcher>,
}

/// A piece of a text: a segment to normalise (text, byte offset), or an added token (id, start, end).
pub enum Piece<'t> {
    Segment(&'t str, usize),
    Added(u32, usize, usize),
}

impl AddedVocabulary {
    /// From the `added_tokens` array of a tokenizer.json; flags the family does not reproduce are refused.
    pub fn from_json(added_tokens: Option<&Value>, allowed: Flags) -> Result<Self> {
        let mut tokens = Vec::new();
        for token in added_tokens.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let content = token.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
            let id = token.get("id").and_then(Value::as_u64).unwrap_or(u64::MAX);
            let mut flags = [false; 4];
            for (flag, key) in flags.iter_mut().zip(["single_word", "lstrip", "rstrip", "normalized"]) {
                *flag = match token.get(key) {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(other) => {
                        return Err(Error::InvalidTokenizer(format!("`{key}` should be a boolean, got {other}")))
                    }
                };
                let allowed = match key {
                    "lstrip" | "rstrip" => allowed.strip,
                    "normalized" => allowed.normalized,
                    _ => false,
                };
                if *flag && !allowed {
                    return Err(Error::unsupported(format!("added token {content:?} has {key}=true")));
                }
            }
            if id > u32::MAX as u64 || content.is_empty() {
                return Err(Error::InvalidTokenizer(format!("bad added token {token}")));
            }
            let [_, lstrip, rstrip, normalized] = flags;
            tokens.push(AddedToken { content, id: id as u32, lstrip, rstrip, normalized });
        }
        Ok(Self::from_tokens(tokens))
    }

    /// Tokens without flags (a vocab.txt's special tokens).
    pub fn new(tokens: Vec<(String, u32)>) -> Self {
        Self::from_tokens(
            tokens
                .into_iter()
                .map(|(content, id)| AddedToken { content, id, lstrip: false, rstrip: false, normalized: false })
                .collect(),
        )
    }

    fn from_tokens(tokens: Vec<AddedToken>) -> Self {
        let matcher = |normalized: bool| {
            let chosen: Vec<usize> = (0..tokens.len()).filter(|&i| tokens[i].normalized == normalized).collect();
            (!chosen.is_empty()).then(|| Matcher {
                automaton: AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(chosen.iter().map(|&i| tokens[i].content.as_str())),
                tokens: chosen,
            })
        };
        let (raw, normalized) = (matcher(false), matcher(true));
        AddedVocabulary { tokens, raw, normalized }
    }

    pub fn tokens(&self) -> impl Iterator<Item = (&str, u32)> {
        self.tokens.iter().map(|t| (t.content.as_str(), t.id))
    }

    pub fn contains_id(&self, id: u32) -> bool {
        self.tokens.iter().any(|t| t.id == id)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.tokens.iter().find(|t| t.content == token).map(|t| t.id)
    }

    /// Cut `text` into added tokens and the non-empty segments between them, in order.
    #[inline]
    pub fn split<'t, F: FnMut(Piece<'t>)>(&self, text: &'t str, mut piece: F) {
        match (&self.raw, &self.normalized) {
            (None, None) => piece(Piece::Segment(text, 0)),
            (Some(raw), None) => self.split_with(raw, text, 0, &mut piece),
            (None, Some(normalized)) => self.split_with(normalized, text, 0, &mut piece),
            (Some(raw), Some(normalized)) => self.split_with(raw, text, 0, &mut |p| match p {
                Piece::Segment(segment, base) => self.split_with(normalized, segment, base, &mut piece),
                added => piece(added),
            }),
        }
    }

    fn split_with<'t>(&self, matcher: &Matcher, text: &'t str, base: usize, piece: &mut dyn FnMut(Piece<'t>)) {
        let mut last = 0;
        for found in matcher.automaton.find_iter(text) {
            let token = &self.tokens[matcher.tokens[found.pattern()]];
            let (mut start, mut stop) = (found.start(), found.end());
            if token.lstrip {
                start = (text[..start].trim_end_matches(is_space).len()).max(last);
            }
            if token.rstrip {
                stop = text.len() - text[stop..].trim_start_matches(is_space).len();
            }
            if last < start {
                piece(Piece::Segment(&text[last..start], base + last));
            }
            piece(Piece::Added(token.id, base + start, base + stop));
            last = stop;
        }
        if last < text.len() {
            piece(Piece::Segment(&text[last..], base + last));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(v: &AddedVocabulary, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        v.split(text, |p| {
            out.push(match p {
                Piece::Segment(s, base) => {
                    assert_eq!(&text[base..base + s.len()], s);
                    format!("{s:?}")
                }
                Piece::Added(id, a, b) => format!("{id}{:?}", &text[a..b]),
            })
        });
        out
    }

    #[test]
    fn strips_whitespace_into_the_token_and_matches_normalized_tokens_second() {
        let json = serde_json::json!([
            {"id": 0, "content": "<s>", "normalized": false},
            {"id": 1, "content": "<mask>", "lstrip": true, "rstrip": true, "normalized": false},
            {"id": 2, "content": "s>x", "normalized": true},
            {"id": 3, "content": "word", "normalized": true, "lstrip": true}
        ]);
        let v = AddedVocabulary::from_json(Some(&json), Flags { strip: true, normalized: true }).unwrap();
        assert_eq!(pieces(&v, "a \u{3000}<mask>  b"), vec!["\"a\"", "1\" \\u{3000}<mask>  \"", "\"b\""]);
        // A normalized token never matches across a raw one; lstrip stops at the previous match.
        assert_eq!(pieces(&v, "<s>x s>x<s> word"), vec!["0\"<s>\"", "\"x \"", "2\"s>x\"", "0\"<s>\"", "3\" word\""]);
        assert_eq!(pieces(&v, "<mask> <mask>"), vec!["1\"<mask> \"", "1\"<mask>\""]);
        let error = AddedVocabulary::from_json(Some(&json), Flags::default()).err().unwrap();
        assert_eq!(error.to_string(), "unsupported tokenizer: added token \"<mask>\" has lstrip=true");
        let single = serde_json::json!([{"id": 0, "content": "x", "single_word": true}]);
        assert!(AddedVocabulary::from_json(Some(&single), Flags { strip: true, normalized: true }).is_err());
    }
}
