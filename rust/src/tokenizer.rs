//! The tokenizers qik-find reproduces, one per family, behind `Tokenizer`:
//!
//! * `BertWordPiece`: the BERT tokenizer, as Hugging Face `tokenizers` runs a tokenizer.json with a
//!   `BertNormalizer`, a `BertPreTokenizer` and a `WordPiece` model (or a vocab.txt): added tokens cut
//!   out of the raw text (`added_vocabulary`), each segment between them normalised with alignments
//!   (`normalizer`), split into words (`pre_tokenizer`), each word cut into pieces (`wordpiece`);
//! * `ByteLevelBpe` (`byte_level_bpe`): GPT-2 / RoBERTa style byte-level BPE.
//!
//! Anything else is refused when loading, with `Error::UnsupportedTokenizer` naming the family and the
//! reason (the `tokenizers` crate itself is not packaged for offline builds here, so every family is a
//! re-implementation, and only what is reproduced exactly is served).
//!
//! Token offsets are byte offsets into the original text: for WordPiece, the alignment start of the
//! token's first normalised character to the alignment end of its last.

use std::path::Path;

use serde_json::Value;

use crate::added_vocabulary::{AddedVocabulary, Flags, Piece};
use crate::byte_level_bpe::{BpeScratch, ByteLevelBpe};
use crate::error::{Error, Result};
use crate::normalizer::{BertNormalizer, Normalized};
use crate::post_processor::PostProcessor;
use crate::pre_tokenizer::BertPreTokenizer;
use crate::wordpiece::{PieceBuffers, WordPiece};

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
            Tokenizer::WordPiece(t) => t.tokenize(text, scratch, out),
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

fn type_of(part: &Value) -> &str {
    match part {
        Value::Null => "none",
        _ => part.get("type").and_then(Value::as_str).unwrap_or("untyped"),
    }
}

/// Which family a tokenizer.json belongs to, or why none here reproduces it.
fn family_of(root: &Value) -> Result<Family> {
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

/// One token: id and byte offsets into the text given to `tokenize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub id: u32,
    pub start: usize,
    pub end: usize,
}

pub struct BertWordPiece {
    pub normalizer: BertNormalizer,
    pub pre_tokenizer: BertPreTokenizer,
    pub model: WordPiece,
    pub added: AddedVocabulary,
    id_to_token: Vec<Option<String>>,
}

/// Reusable buffers for tokenizing (one per thread).
#[derive(Default)]
pub struct Scratch {
    pub normalized: Normalized,
    pub words: Vec<(u32, u32)>,
    pub buffers: PieceBuffers,
    pub pieces: Vec<(u32, u32, u32)>,
    pub lowered: String,
    pub bpe: BpeScratch,
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
    pub fn tokenize(&self, text: &str, scratch: &mut Scratch, out: &mut Vec<Token>) {
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
    pub(crate) fn normalize_and_split(&self, segment: &str, base: usize, scratch: &mut Scratch) {
        self.normalizer.normalize(segment, base, &mut scratch.normalized);
        self.pre_tokenizer.split(&scratch.normalized, &mut scratch.words);
    }

    fn tokenize_segment(&self, segment: &str, base: usize, scratch: &mut Scratch, out: &mut Vec<Token>) {
        self.normalize_and_split(segment, base, scratch);
        let Scratch { normalized, words, buffers, pieces, .. } = scratch;
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

    pub(crate) fn tokenizer(lowercase: bool) -> BertWordPiece {
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
        t.tokenize(text, &mut Scratch::default(), &mut out);
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
        t.tokenize("a\u{0}b", &mut Scratch::default(), &mut out);
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
    fn families_are_named_when_served_and_when_refused() {
        let family = |json: serde_json::Value| match Tokenizer::from_tokenizer_json(&json.to_string()) {
            Ok(t) => Ok(t.family().name().to_string()),
            Err(Error::UnsupportedTokenizer { family, reason }) => Err((family, reason)),
            Err(other) => panic!("{other}"),
        };
        let bpe = crate::byte_level_bpe::tests::tokenizer_json(&[("a", "b")], true, Value::Null);
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
