//! `BertWordPiece`: the BERT tokenizer, as Hugging Face `tokenizers` runs a tokenizer.json with a
//! `BertNormalizer`, a `BertPreTokenizer` and a `WordPiece` model (or a vocab.txt): added tokens cut out of
//! the raw text (`added_vocabulary`), each segment between them normalised with alignments
//! (`normalizers::bert`), split into words (`pre_tokenizers::bert`), each word cut into pieces
//! (`models::wordpiece`).
//!
//! Token offsets are byte offsets into the original text: the alignment start of the token's first
//! normalised character to the alignment end of its last.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::models::wordpiece::{PieceBuffers, WordPiece};
use crate::normalizers::bert::{BertNormalizer, Normalized};
use crate::pre_tokenizers::bert::BertPreTokenizer;
use crate::processors::trim_offsets::PostProcessor;
use crate::tokenizer::added_vocabulary::{AddedVocabulary, Flags, Piece};
use crate::tokenizer::family::Family;
use crate::tokenizer::token::Token;

pub struct BertWordPiece {
    pub normalizer: BertNormalizer,
    pub pre_tokenizer: BertPreTokenizer,
    pub model: WordPiece,
    pub added: AddedVocabulary,
    id_to_token: Vec<Option<String>>,
}

/// Reusable buffers of `BertWordPiece::tokenize` (one per thread).
#[derive(Default)]
pub struct WordPieceScratch {
    pub normalized: Normalized,
    pub words: Vec<(u32, u32)>,
    pub buffers: PieceBuffers,
    pub pieces: Vec<(u32, u32, u32)>,
}

impl BertWordPiece {
    /// From the text of a tokenizer.json.
    pub fn from_tokenizer_json(json: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(json)
            .map_err(|e| Error::InvalidTokenizer(format!("tokenizer.json is not valid JSON: {e}")))?;
        Self::from_value(&root).map_err(|e| e.in_family(Family::WordPiece.name()))
    }

    /// From a parsed tokenizer.json.
    pub fn from_value(root: &Value) -> Result<Self> {
        let part = |key: &str| root.get(key).unwrap_or(&Value::Null);
        let normalizer = BertNormalizer::from_json(part("normalizer"))?;
        let pre_tokenizer = BertPreTokenizer::from_json(part("pre_tokenizer"))?;
        let model = WordPiece::from_json(part("model"))?;
        if PostProcessor::from_json(part("post_processor"))?.trims() {
            return Err(Error::unsupported("a post_processor that trims offsets is not reproduced for WordPiece"));
        }
        let added = AddedVocabulary::from_json(root.get("added_tokens"), Flags::default())?;
        Ok(Self::new(normalizer, pre_tokenizer, model, added))
    }

    /// From a tokenizer directory (or a tokenizer.json file): tokenizer.json if present, else vocab.txt
    /// (+ tokenizer_config.json for `do_lower_case`, `strip_accents`, `tokenize_chinese_chars`).
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let json_path = if dir.is_file() { dir.to_path_buf() } else { dir.join("tokenizer.json") };
        if json_path.is_file() {
            let text = std::fs::read_to_string(&json_path).map_err(|e| Error::io(&json_path, e))?;
            return Self::from_tokenizer_json(&text).map_err(|e| e.in_file(&json_path));
        }
        // A vocab.txt alone: BERT's pipeline.
        let vocab_path = dir.join("vocab.txt");
        let text = std::fs::read_to_string(&vocab_path).map_err(|e| {
            let message = format!("{e} (expected a directory with tokenizer.json or vocab.txt)");
            Error::io(&vocab_path, std::io::Error::new(e.kind(), message))
        })?;
        let model = WordPiece::from_vocab_txt(&text).map_err(|e| e.in_file(&vocab_path))?;
        let config_path = dir.join("tokenizer_config.json");
        let config: Value = match std::fs::read_to_string(&config_path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Error::InvalidTokenizer(format!("{}: invalid JSON: {e}", config_path.display())))?,
            Err(_) => Value::Null,
        };
        let normalizer = BertNormalizer::from_tokenizer_config(&config).map_err(|e| e.in_file(&config_path))?;
        let added = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .filter_map(|t| model.token_to_id(t).map(|id| (t.to_string(), id)))
            .collect();
        Ok(Self::new(normalizer, BertPreTokenizer, model, AddedVocabulary::new(added)))
    }

    fn new(
        normalizer: BertNormalizer,
        pre_tokenizer: BertPreTokenizer,
        model: WordPiece,
        added: AddedVocabulary,
    ) -> Self {
        let size = model.vocab().chain(added.tokens()).map(|(_, id)| id as usize + 1).max().unwrap_or(0);
        let mut id_to_token = vec![None; size];
        for (token, id) in model.vocab().chain(added.tokens()) {
            id_to_token[id as usize] = Some(token.to_string());
        }
        BertWordPiece { normalizer, pre_tokenizer, model, added, id_to_token }
    }

    pub fn vocab_size(&self) -> usize {
        self.id_to_token.len()
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.id_to_token.get(id as usize).and_then(|t| t.as_deref())
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.model.token_to_id(token).or_else(|| self.added.token_to_id(token))
    }

    pub fn is_added_token(&self, id: u32) -> bool {
        self.added.contains_id(id)
    }

    /// Tokenize `text` (no special tokens added), replacing `out` with tokens with byte offsets into `text`.
    pub fn tokenize(&self, text: &str, scratch: &mut WordPieceScratch, out: &mut Vec<Token>) {
        out.clear();
        self.added.split(text, |piece| match piece {
            Piece::Added(id, start, end) => out.push(Token { id, start, end }),
            Piece::Segment(segment, base) => self.tokenize_segment(segment, base, scratch, out),
        });
    }

    /// The normalised text, as the normaliser alone makes it (no added-token splitting).
    pub fn normalize_str(&self, text: &str) -> String {
        let mut out = String::new();
        self.normalizer.normalize_str(text, &mut out);
        out
    }

    /// Normalise a segment into `scratch` and cut it into words.
    pub(crate) fn normalize_and_split(&self, segment: &str, base: usize, scratch: &mut WordPieceScratch) {
        self.normalizer.normalize(segment, base, &mut scratch.normalized);
        self.pre_tokenizer.split(&scratch.normalized, &mut scratch.words);
    }

    fn tokenize_segment(&self, segment: &str, base: usize, scratch: &mut WordPieceScratch, out: &mut Vec<Token>) {
        self.normalize_and_split(segment, base, scratch);
        let WordPieceScratch { normalized, words, buffers, pieces, .. } = scratch;
        for &(first, last) in words.iter() {
            let (first, last) = (first as usize, last as usize);
            pieces.clear();
            self.model.pieces(normalized.slice(first, last), last - first, buffers, pieces);
            for &(id, a, b) in pieces.iter() {
                let start = normalized.align[first + a as usize].0 as usize;
                let end = normalized.align[first + b as usize - 1].1 as usize;
                out.push(Token { id, start, end });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer(lowercase: bool) -> BertWordPiece {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "inter", "##leukin", "##le", "il", "-", "2", "cafe", "caf",
            "##e", "a", "##b", "b", ".", "(", ")", "中", "文", "istanbul", "Cafe", "x", "##x",
        ];
        let vocab_json: serde_json::Map<String, Value> =
            vocab.iter().enumerate().map(|(i, t)| (t.to_string(), Value::from(i))).collect();
        let json = serde_json::json!({
            "added_tokens": [
                {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 4, "content": "[MASK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
            ],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": lowercase},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12, "vocab": vocab_json}
        });
        BertWordPiece::from_tokenizer_json(&json.to_string()).unwrap()
    }

    fn run(t: &BertWordPiece, text: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        t.tokenize(text, &mut WordPieceScratch::default(), &mut out);
        out.iter().map(|k| (t.id_to_token(k.id).unwrap().to_string(), text[k.start..k.end].to_string())).collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn greedy_longest_match_with_continuation_pieces() {
        let t = tokenizer(true);
        assert_eq!(
            run(&t, "Interleukin-2 (IL-2)."),
            pairs(&[
                ("inter", "Inter"),
                ("##leukin", "leukin"),
                ("-", "-"),
                ("2", "2"),
                ("(", "("),
                ("il", "IL"),
                ("-", "-"),
                ("2", "2"),
                (")", ")"),
                (".", ".")
            ])
        );
        // No piece for "q": the whole word is one [UNK].
        assert_eq!(run(&t, "abq b"), pairs(&[("[UNK]", "abq"), ("b", "b")]));
        // Longer than max_input_chars_per_word (12): [UNK].
        assert_eq!(run(&t, "xxxxxxxxxxxxx xxxxxxxxxxxx"), {
            let mut v = pairs(&[("[UNK]", "xxxxxxxxxxxxx"), ("x", "x")]);
            v.extend(std::iter::repeat(("##x".to_string(), "x".to_string())).take(11));
            v
        });
    }

    #[test]
    fn normalisation_keeps_offsets_in_the_original_text() {
        let t = tokenizer(true);
        // Accents stripped (NFD + drop Mn), both precomposed and combining; İ lowercases via NFD.
        assert_eq!(
            run(&t, "Café cafe\u{301} İstanbul"),
            pairs(&[("cafe", "Café"), ("cafe", "cafe"), ("istanbul", "İstanbul")])
        );
        // (a removed combining mark after the last kept character is outside the span, as in tokenizers)
        // Control characters and U+FFFD are dropped; the span covers them when inside the word.
        assert_eq!(
            run(&t, "a\u{0}b \u{FFFD}b a\u{200b}b"),
            pairs(&[("a", "a"), ("##b", "b"), ("b", "b"), ("a", "a"), ("##b", "b")])
        );
        let mut out = Vec::new();
        t.tokenize("a\u{0}b", &mut WordPieceScratch::default(), &mut out);
        assert_eq!((out[1].start, out[1].end), (2, 3));
        // CJK ideographs become words of their own.
        assert_eq!(run(&t, "x中文x"), pairs(&[("x", "x"), ("中", "中"), ("文", "文"), ("x", "x")]));
        // Special tokens are matched on the raw text, case-sensitively.
        assert_eq!(
            run(&t, "a[MASK]b [mask]"),
            pairs(&[("a", "a"), ("[MASK]", "[MASK]"), ("b", "b"), ("[UNK]", "["), ("[UNK]", "mask"), ("[UNK]", "]")])
        );
    }

    #[test]
    fn cased_tokenizer_keeps_case_and_accents() {
        let t = tokenizer(false);
        // Accents kept: no "##é" piece, so "café" is one [UNK].
        assert_eq!(run(&t, "Cafe café"), pairs(&[("Cafe", "Cafe"), ("[UNK]", "café")]));
    }

    #[test]
    fn rejects_what_it_cannot_reproduce_with_typed_errors() {
        let json = r#"{"normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}"#;
        match BertWordPiece::from_tokenizer_json(json) {
            Err(Error::UnsupportedTokenizer { family, reason }) => {
                assert_eq!(family, "WordPiece");
                assert!(reason.starts_with("normalizer must be BertNormalizer"), "{reason}");
            }
            other => panic!("{:?}", other.err()),
        }
        let json = r#"{"added_tokens": [{"id": 0, "content": "[UNK]", "lstrip": true}], "normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}"#;
        let error = BertWordPiece::from_tokenizer_json(json).err().unwrap();
        assert!(
            matches!(&error, Error::UnsupportedTokenizer { reason, .. } if reason.contains("lstrip=true")),
            "{error}"
        );
        assert_eq!(error.to_string(), "unsupported tokenizer (WordPiece): added token \"[UNK]\" has lstrip=true");
        let json = r#"{"normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "WordPiece", "vocab": {"a": 0}}}"#;
        assert!(matches!(BertWordPiece::from_tokenizer_json(json), Err(Error::InvalidTokenizer(_))));
        assert!(matches!(BertWordPiece::from_tokenizer_json("{"), Err(Error::InvalidTokenizer(_))));
        let missing = std::env::temp_dir().join(format!("qikfind-no-tokenizer-{}", std::process::id()));
        match BertWordPiece::from_dir(&missing) {
            Err(Error::Io { path, source }) => {
                assert_eq!(path, missing.join("vocab.txt"));
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{:?}", other.err()),
        }
    }
}
