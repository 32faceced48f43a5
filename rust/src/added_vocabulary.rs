//! Added tokens (special tokens such as `[MASK]`) matched on the raw text, leftmost-longest, before
//! normalisation: the text between them is normalised and pre-tokenized segment by segment.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde_json::Value;

use crate::error::{Error, Result};

pub struct AddedVocabulary {
    tokens: Vec<(String, u32)>,
    matcher: Option<AhoCorasick>,
}

/// A piece of a text: a segment to normalise (text, byte offset), or an added token (id, start, end).
pub enum Piece<'t> {
    Segment(&'t str, usize),
    Added(u32, usize, usize),
}

impl AddedVocabulary {
    /// From the `added_tokens` array of a tokenizer.json. Tokens with `lstrip`, `rstrip`, `single_word`
    /// or `normalized` set are not reproduced.
    pub fn from_json(added_tokens: Option<&Value>) -> Result<Self> {
        let mut tokens = Vec::new();
        for token in added_tokens.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let content = token.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
            let id = token.get("id").and_then(Value::as_u64).unwrap_or(u64::MAX);
            for key in ["single_word", "lstrip", "rstrip", "normalized"] {
                match token.get(key) {
                    None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                    Some(Value::Bool(true)) => {
                        return Err(Error::UnsupportedTokenizer(format!("added token {content:?} has {key}=true")))
                    }
                    Some(other) => {
                        return Err(Error::InvalidTokenizer(format!("`{key}` should be a boolean, got {other}")))
                    }
                }
            }
            if id > u32::MAX as u64 || content.is_empty() {
                return Err(Error::InvalidTokenizer(format!("bad added token {token}")));
            }
            tokens.push((content, id as u32));
        }
        Ok(Self::new(tokens))
    }

    pub fn new(tokens: Vec<(String, u32)>) -> Self {
        let matcher = if tokens.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(tokens.iter().map(|(content, _)| content.as_str())),
            )
        };
        AddedVocabulary { tokens, matcher }
    }

    pub fn tokens(&self) -> impl Iterator<Item = (&str, u32)> {
        self.tokens.iter().map(|(t, id)| (t.as_str(), *id))
    }

    pub fn contains_id(&self, id: u32) -> bool {
        self.tokens.iter().any(|(_, i)| *i == id)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.tokens.iter().find(|(t, _)| t == token).map(|(_, id)| *id)
    }

    /// Cut `text` into added tokens and the non-empty segments between them, in order.
    #[inline]
    pub fn split<'t, F: FnMut(Piece<'t>)>(&self, text: &'t str, mut piece: F) {
        let matcher = match &self.matcher {
            None => return piece(Piece::Segment(text, 0)),
            Some(matcher) => matcher,
        };
        let mut last = 0;
        for found in matcher.find_iter(text) {
            if found.start() > last {
                piece(Piece::Segment(&text[last..found.start()], last));
            }
            piece(Piece::Added(self.tokens[found.pattern()].1, found.start(), found.end()));
            last = found.end();
        }
        if last < text.len() {
            piece(Piece::Segment(&text[last..], last));
        }
    }
}
