//! The WordPiece model: greedy longest-match-first pieces of a word, `##` before every piece but the
//! first, and the whole word as one `[UNK]` when some position has no piece or the word is longer than
//! `max_input_chars_per_word`.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::utils::hash::FxHashMap;

pub struct WordPiece {
    vocab: FxHashMap<String, u32>,
    pub unk_token: String,
    pub unk_id: u32,
    pub continuing_prefix: String,
    pub max_input_chars_per_word: usize,
    /// Longest vocabulary piece (prefix removed), in code points: no longer substring can match.
    max_piece_chars: usize,
}

/// Reusable buffers of `WordPiece::pieces`.
#[derive(Default)]
pub struct PieceBuffers {
    piece: String,
    bounds: Vec<u32>,
}

impl WordPiece {
    /// From the `model` object of a tokenizer.json.
    pub fn from_json(model: &Value) -> Result<Self> {
        if model.get("type").and_then(Value::as_str) != Some("WordPiece") {
            return Err(Error::unsupported("model must be WordPiece"));
        }
        let vocab_json = model
            .get("vocab")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::InvalidTokenizer("model.vocab missing".to_string()))?;
        let mut vocab = FxHashMap::with_capacity_and_hasher(vocab_json.len(), Default::default());
        for (token, id) in vocab_json {
            let id = id
                .as_u64()
                .filter(|id| *id <= u32::MAX as u64)
                .ok_or_else(|| Error::InvalidTokenizer(format!("bad id for token {token:?}")))?;
            vocab.insert(token.clone(), id as u32);
        }
        let text = |key: &str, default: &str| model.get(key).and_then(Value::as_str).unwrap_or(default).to_string();
        let max_input_chars_per_word =
            model.get("max_input_chars_per_word").and_then(Value::as_u64).unwrap_or(100) as usize;
        Self::new(vocab, text("unk_token", "[UNK]"), text("continuing_subword_prefix", "##"), max_input_chars_per_word)
    }

    /// From the text of a vocab.txt: one token per line, the id is the line number (as tokenizers'
    /// `WordPiece::read_file`); BERT's `[UNK]`, `##` and 100 characters per word.
    pub fn from_vocab_txt(text: &str) -> Result<Self> {
        let mut vocab = FxHashMap::default();
        for (line_number, line) in text.lines().enumerate() {
            vocab.entry(line.trim_end_matches(['\r', '\n']).to_string()).or_insert(line_number as u32);
        }
        Self::new(vocab, "[UNK]".to_string(), "##".to_string(), 100)
    }

    fn new(
        vocab: FxHashMap<String, u32>,
        unk_token: String,
        continuing_prefix: String,
        max_input_chars_per_word: usize,
    ) -> Result<Self> {
        let unk_id = *vocab
            .get(&unk_token)
            .ok_or_else(|| Error::InvalidTokenizer(format!("unknown token {unk_token:?} is not in the vocabulary")))?;
        let max_piece_chars = vocab
            .keys()
            .map(|t| t.strip_prefix(continuing_prefix.as_str()).unwrap_or(t).chars().count())
            .max()
            .unwrap_or(1);
        Ok(WordPiece { vocab, unk_token, unk_id, continuing_prefix, max_input_chars_per_word, max_piece_chars })
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    pub fn vocab(&self) -> impl Iterator<Item = (&str, u32)> {
        self.vocab.iter().map(|(t, id)| (t.as_str(), *id))
    }

    /// Greedy longest-match-first pieces of one normalised word of `n_chars` code points: appends
    /// (id, first char, end char) in word-relative code points.
    pub fn pieces(&self, word: &str, n_chars: usize, buffers: &mut PieceBuffers, out: &mut Vec<(u32, u32, u32)>) {
        if n_chars > self.max_input_chars_per_word {
            out.push((self.unk_id, 0, n_chars as u32));
            return;
        }
        let PieceBuffers { piece, bounds } = buffers;
        bounds.clear();
        bounds.extend(word.char_indices().map(|(i, _)| i as u32));
        bounds.push(word.len() as u32);
        let word_tokens = out.len();
        let mut start = 0;
        while start < n_chars {
            let mut end = n_chars.min(start + self.max_piece_chars);
            let mut found = None;
            while end > start {
                let surface = &word[bounds[start] as usize..bounds[end] as usize];
                let id = if start == 0 {
                    self.vocab.get(surface)
                } else {
                    piece.clear();
                    piece.push_str(&self.continuing_prefix);
                    piece.push_str(surface);
                    self.vocab.get(piece.as_str())
                };
                if let Some(id) = id {
                    found = Some(*id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    out.push((id, start as u32, end as u32));
                    start = end;
                }
                None => {
                    out.truncate(word_tokens);
                    out.push((self.unk_id, 0, n_chars as u32));
                    return;
                }
            }
        }
    }
}
