//! BERT WordPiece tokenization with offsets, re-implemented to give exactly what Hugging Face
//! `tokenizers` gives for a tokenizer.json with a `BertNormalizer`, a `BertPreTokenizer` and a
//! `WordPiece` model (the `tokenizers` crate itself is not packaged for offline builds here).
//!
//! Pipeline, as in `tokenizers`: (1) added tokens that are matched on the raw text (special tokens
//! such as `[MASK]`) are cut out first (leftmost-longest); (2) each remaining segment is normalised
//! character by character (clean text: drop NUL, U+FFFD and Cc/Cf/Co characters except tab/newline/
//! carriage return, map whitespace to a space; spaces around CJK ideographs; strip accents: NFD then
//! drop Mn marks; lowercase), every normalised character remembering the original character it comes
//! from; (3) words are split on whitespace (removed) and punctuation (each its own word); (4) each
//! word is cut greedily into the longest vocabulary pieces (`##` prefix after the first), or is one
//! `[UNK]` when a position has no piece or the word is longer than `max_input_chars_per_word`.
//! Token offsets are byte offsets into the original text: first normalised character's start to
//! last normalised character's end.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde_json::Value;
use unicode_categories::UnicodeCategories;

#[derive(Debug, Clone)]
pub struct TokenizerError(pub String);

impl fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for TokenizerError {}

fn unsupported(message: String) -> TokenizerError {
    // The Python side recognises this prefix and falls back to its own backend.
    TokenizerError(format!("unsupported tokenizer: {message}"))
}

/// One token: id and byte offsets into the text given to `tokenize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub id: u32,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone)]
pub struct NormalizerConfig {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    pub strip_accents: bool,
    pub lowercase: bool,
}

pub struct BertWordPiece {
    pub normalizer: NormalizerConfig,
    vocab: HashMap<String, u32, FxBuildHasher>,
    id_to_token: Vec<Option<String>>,
    pub unk_id: u32,
    pub continuing_prefix: String,
    pub max_input_chars_per_word: usize,
    /// Longest vocabulary piece (prefix removed), in code points: no longer substring can match.
    max_piece_chars: usize,
    /// Added tokens matched on the raw text, and their ids.
    added: Option<(AhoCorasick, Vec<u32>)>,
    added_ids: Vec<u32>,
}

fn flag(value: &Value, key: &str, default: bool) -> Result<bool, TokenizerError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(TokenizerError(format!("tokenizer.json: `{key}` should be a boolean, got {other}"))),
    }
}

// ------------------------------------------------------------------------------------ character classes

/// BERT's whitespace: tab, newline, carriage return and Unicode White_Space.
#[inline]
fn is_bert_whitespace(c: char) -> bool {
    c == '\t' || c == '\n' || c == '\r' || c.is_whitespace()
}

/// BERT's control characters: Cc, Cf and Co (per unicode_categories, like `tokenizers`), except the
/// three whitespace controls.
#[inline]
fn is_bert_control(c: char) -> bool {
    if c == '\t' || c == '\n' || c == '\r' {
        return false;
    }
    c.is_other()
}

#[inline]
fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[inline]
fn is_bert_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

impl NormalizerConfig {
    /// Normalise one original character, calling `emit` for each resulting character.
    #[inline]
    pub fn normalize_char<F: FnMut(char)>(&self, c: char, mut emit: F) {
        let mut c = c;
        if self.clean_text {
            if c == '\0' || c == '\u{FFFD}' || is_bert_control(c) {
                return;
            }
            if is_bert_whitespace(c) {
                c = ' ';
            }
        }
        if self.handle_chinese_chars && is_chinese_char(c) {
            emit(' ');
            self.accents_and_case(c, &mut emit);
            emit(' ');
            return;
        }
        self.accents_and_case(c, &mut emit);
    }

    #[inline]
    fn accents_and_case<F: FnMut(char)>(&self, c: char, emit: &mut F) {
        if c.is_ascii() {
            emit(if self.lowercase { c.to_ascii_lowercase() } else { c });
            return;
        }
        let lowercase = self.lowercase;
        let mut case = |d: char| {
            if lowercase {
                for l in d.to_lowercase() {
                    emit(l);
                }
            } else {
                emit(d);
            }
        };
        if self.strip_accents {
            unicode_normalization::char::decompose_canonical(c, |d| {
                if !d.is_mark_nonspacing() {
                    case(d)
                }
            });
        } else {
            case(c);
        }
    }

    /// The normalised text (no alignment), used by the prefilter.
    pub fn normalize_into(&self, text: &str, out: &mut String) {
        out.clear();
        for c in text.chars() {
            self.normalize_char(c, |n| out.push(n));
        }
    }
}

// ------------------------------------------------------------------------------------------- loading

impl BertWordPiece {
    /// From the text of a tokenizer.json.
    pub fn from_tokenizer_json(json: &str) -> Result<Self, TokenizerError> {
        let root: Value =
            serde_json::from_str(json).map_err(|e| TokenizerError(format!("tokenizer.json is not valid JSON: {e}")))?;
        let normalizer = root.get("normalizer").unwrap_or(&Value::Null);
        if normalizer.get("type").and_then(Value::as_str) != Some("BertNormalizer") {
            return Err(unsupported(format!("normalizer must be BertNormalizer, got {normalizer}")));
        }
        let lowercase = flag(normalizer, "lowercase", true)?;
        let normalizer_config = NormalizerConfig {
            clean_text: flag(normalizer, "clean_text", true)?,
            handle_chinese_chars: flag(normalizer, "handle_chinese_chars", true)?,
            // strip_accents: null means "same as lowercase".
            strip_accents: flag(normalizer, "strip_accents", lowercase)?,
            lowercase,
        };
        let pre_tokenizer = root.get("pre_tokenizer").unwrap_or(&Value::Null);
        if pre_tokenizer.get("type").and_then(Value::as_str) != Some("BertPreTokenizer") {
            return Err(unsupported(format!("pre_tokenizer must be BertPreTokenizer, got {pre_tokenizer}")));
        }
        let model = root.get("model").unwrap_or(&Value::Null);
        if model.get("type").and_then(Value::as_str) != Some("WordPiece") {
            return Err(unsupported("model must be WordPiece".to_string()));
        }
        let vocab_json = model
            .get("vocab")
            .and_then(Value::as_object)
            .ok_or_else(|| TokenizerError("tokenizer.json: model.vocab missing".to_string()))?;
        let mut vocab = HashMap::with_capacity(vocab_json.len());
        for (token, id) in vocab_json {
            let id = id
                .as_u64()
                .filter(|id| *id <= u32::MAX as u64)
                .ok_or_else(|| TokenizerError(format!("tokenizer.json: bad id for token {token:?}")))?;
            vocab.insert(token.clone(), id as u32);
        }
        let unk_token = model.get("unk_token").and_then(Value::as_str).unwrap_or("[UNK]").to_string();
        let continuing_prefix =
            model.get("continuing_subword_prefix").and_then(Value::as_str).unwrap_or("##").to_string();
        let max_input_chars_per_word =
            model.get("max_input_chars_per_word").and_then(Value::as_u64).unwrap_or(100) as usize;

        let mut added = Vec::new();
        if let Some(tokens) = root.get("added_tokens").and_then(Value::as_array) {
            for token in tokens {
                let content = token.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
                let id = token.get("id").and_then(Value::as_u64).unwrap_or(u64::MAX);
                for key in ["single_word", "lstrip", "rstrip", "normalized"] {
                    if flag(token, key, false)? {
                        return Err(unsupported(format!("added token {content:?} has {key}=true")));
                    }
                }
                if id > u32::MAX as u64 || content.is_empty() {
                    return Err(TokenizerError(format!("tokenizer.json: bad added token {token}")));
                }
                added.push((content, id as u32));
            }
        }
        Self::build(normalizer_config, vocab, unk_token, continuing_prefix, max_input_chars_per_word, added)
    }

    /// From a tokenizer directory: tokenizer.json if present, else vocab.txt (+ tokenizer_config.json
    /// for `do_lower_case`, `strip_accents`, `tokenize_chinese_chars`).
    pub fn from_dir(dir: &Path) -> Result<Self, TokenizerError> {
        let json_path = if dir.is_file() { dir.to_path_buf() } else { dir.join("tokenizer.json") };
        if json_path.is_file() {
            let text = std::fs::read_to_string(&json_path)
                .map_err(|e| TokenizerError(format!("{}: {e}", json_path.display())))?;
            return Self::from_tokenizer_json(&text)
                .map_err(|e| TokenizerError(format!("{}: {}", json_path.display(), e.0)));
        }
        let vocab_path = dir.join("vocab.txt");
        let text = std::fs::read_to_string(&vocab_path).map_err(|e| {
            TokenizerError(format!(
                "{}: {e} (expected a directory with tokenizer.json or vocab.txt)",
                vocab_path.display()
            ))
        })?;
        let mut vocab = HashMap::new();
        for (line_number, line) in text.lines().enumerate() {
            // Like tokenizers' WordPiece::read_file: one token per line, the id is the line number.
            vocab.entry(line.trim_end_matches(['\r', '\n']).to_string()).or_insert(line_number as u32);
        }
        let config_path = dir.join("tokenizer_config.json");
        let config: Value = match std::fs::read_to_string(&config_path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| TokenizerError(format!("{}: invalid JSON: {e}", config_path.display())))?,
            Err(_) => Value::Null,
        };
        let lowercase = flag(&config, "do_lower_case", true)?;
        let normalizer = NormalizerConfig {
            clean_text: true,
            handle_chinese_chars: flag(&config, "tokenize_chinese_chars", true)?,
            strip_accents: flag(&config, "strip_accents", lowercase)?,
            lowercase,
        };
        let added = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .filter_map(|t| vocab.get(*t).map(|id| (t.to_string(), *id)))
            .collect();
        Self::build(normalizer, vocab, "[UNK]".to_string(), "##".to_string(), 100, added)
    }

    fn build(
        normalizer: NormalizerConfig,
        vocab: HashMap<String, u32>,
        unk_token: String,
        continuing_prefix: String,
        max_input_chars_per_word: usize,
        added: Vec<(String, u32)>,
    ) -> Result<Self, TokenizerError> {
        let unk_id = *vocab
            .get(&unk_token)
            .ok_or_else(|| TokenizerError(format!("unknown token {unk_token:?} is not in the vocabulary")))?;
        let size = vocab.values().chain(added.iter().map(|(_, id)| id)).map(|id| *id as usize + 1).max().unwrap_or(0);
        let mut id_to_token = vec![None; size];
        for (token, id) in &vocab {
            id_to_token[*id as usize] = Some(token.clone());
        }
        for (token, id) in &added {
            id_to_token[*id as usize] = Some(token.clone());
        }
        let max_piece_chars = vocab
            .keys()
            .map(|t| t.strip_prefix(continuing_prefix.as_str()).unwrap_or(t).chars().count())
            .max()
            .unwrap_or(1);
        let added_ids: Vec<u32> = added.iter().map(|(_, id)| *id).collect();
        let added_matcher = if added.is_empty() {
            None
        } else {
            let automaton = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(added.iter().map(|(content, _)| content.as_str()));
            Some((automaton, added_ids.clone()))
        };
        Ok(BertWordPiece {
            normalizer,
            vocab: vocab.into_iter().collect(),
            id_to_token,
            unk_id,
            continuing_prefix,
            max_input_chars_per_word,
            max_piece_chars,
            added: added_matcher,
            added_ids,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.id_to_token.len()
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.id_to_token.get(id as usize).and_then(|t| t.as_deref())
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab
            .get(token)
            .copied()
            .or_else(|| self.added_ids.iter().copied().find(|id| self.id_to_token(*id) == Some(token)))
    }

    pub fn is_added_token(&self, id: u32) -> bool {
        self.added_ids.contains(&id)
    }

    // ------------------------------------------------------------------------------------ tokenizing

    /// Tokenize `text` (no special tokens added), appending tokens with byte offsets into `text`.
    pub fn tokenize(&self, text: &str, scratch: &mut Scratch, out: &mut Vec<Token>) {
        out.clear();
        match &self.added {
            None => self.tokenize_segment(text, 0, scratch, out),
            Some((automaton, ids)) => {
                let mut last = 0;
                for found in automaton.find_iter(text) {
                    if found.start() > last {
                        self.tokenize_segment(&text[last..found.start()], last, scratch, out);
                    }
                    out.push(Token { id: ids[found.pattern()], start: found.start(), end: found.end() });
                    last = found.end();
                }
                if last < text.len() {
                    self.tokenize_segment(&text[last..], last, scratch, out);
                }
            }
        }
    }

    /// Normalise a segment into `scratch`, remembering for each normalised char the original byte
    /// range (offset by `base`) it comes from, and cut it into words (normalised char ranges).
    fn normalize_segment(&self, segment: &str, base: usize, scratch: &mut Scratch) {
        let Scratch { normalized, char_starts, align, words, .. } = scratch;
        normalized.clear();
        char_starts.clear();
        align.clear();
        words.clear();
        for (offset, c) in segment.char_indices() {
            let span = ((base + offset) as u32, (base + offset + c.len_utf8()) as u32);
            self.normalizer.normalize_char(c, |n| {
                char_starts.push(normalized.len() as u32);
                normalized.push(n);
                align.push(span);
            });
        }
        char_starts.push(normalized.len() as u32);

        // Pre-tokenize: whitespace separates words and is dropped; punctuation is a word of its own.
        let mut word_start: Option<u32> = None;
        let mut index = 0u32;
        for n in normalized.chars() {
            if n.is_whitespace() {
                if let Some(start) = word_start.take() {
                    words.push((start, index));
                }
            } else if is_bert_punctuation(n) {
                if let Some(start) = word_start.take() {
                    words.push((start, index));
                }
                words.push((index, index + 1));
            } else if word_start.is_none() {
                word_start = Some(index);
            }
            index += 1;
        }
        if let Some(start) = word_start {
            words.push((start, index));
        }
    }

    fn tokenize_segment(&self, segment: &str, base: usize, scratch: &mut Scratch, out: &mut Vec<Token>) {
        self.normalize_segment(segment, base, scratch);
        let Scratch { normalized, char_starts, align, words, piece, bounds, pieces, .. } = scratch;
        for &(first, last) in words.iter() {
            let (first, last) = (first as usize, last as usize);
            let word = &normalized[char_starts[first] as usize..char_starts[last] as usize];
            pieces.clear();
            self.word_pieces(word, last - first, piece, bounds, pieces);
            for &(id, a, b) in pieces.iter() {
                let start = align[first + a as usize].0 as usize;
                let end = align[first + b as usize - 1].1 as usize;
                out.push(Token { id, start, end });
            }
        }
    }

    /// Greedy longest-match-first WordPiece of one normalised word of `n_chars` code points:
    /// appends (id, first char, end char) in word-relative code points.
    fn word_pieces(
        &self,
        word: &str,
        n_chars: usize,
        piece: &mut String,
        bounds: &mut Vec<u32>,
        out: &mut Vec<(u32, u32, u32)>,
    ) {
        if n_chars > self.max_input_chars_per_word {
            out.push((self.unk_id, 0, n_chars as u32));
            return;
        }
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

    // ------------------------------------------------------------------------------- target search

    /// The target tokens of `sentence`, in order: appends (slot, start byte, end byte) for every token
    /// whose `slot_of[id]` is not `u32::MAX`. Same tokens as `tokenize`, but each distinct word is
    /// cut into pieces once per `cache`, and plain-ASCII sentences skip the alignment bookkeeping.
    pub fn find_targets(
        &self,
        sentence: &str,
        plain_ascii: bool,
        slot_of: &[u32],
        cache: &mut WordCache,
        scratch: &mut Scratch,
        hits: &mut Vec<(u32, usize, usize)>,
    ) {
        hits.clear();
        let slot = |id: u32| slot_of.get(id as usize).copied().unwrap_or(u32::MAX);
        match &self.added {
            None => self.segment_targets(sentence, 0, plain_ascii, slot_of, cache, scratch, hits),
            Some((automaton, ids)) => {
                let mut last = 0;
                for found in automaton.find_iter(sentence) {
                    if found.start() > last {
                        self.segment_targets(
                            &sentence[last..found.start()],
                            last,
                            plain_ascii,
                            slot_of,
                            cache,
                            scratch,
                            hits,
                        );
                    }
                    let target = slot(ids[found.pattern()]);
                    if target != u32::MAX {
                        hits.push((target, found.start(), found.end()));
                    }
                    last = found.end();
                }
                if last < sentence.len() {
                    self.segment_targets(&sentence[last..], last, plain_ascii, slot_of, cache, scratch, hits);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn segment_targets(
        &self,
        segment: &str,
        base: usize,
        plain_ascii: bool,
        slot_of: &[u32],
        cache: &mut WordCache,
        scratch: &mut Scratch,
        hits: &mut Vec<(u32, usize, usize)>,
    ) {
        if plain_ascii {
            // Printable ASCII (+ tab/newline/CR) normalises to itself (lowercased): byte = char offsets,
            // words are runs of ASCII alphanumerics.
            let bytes = segment.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                let b = bytes[i];
                if b == b' ' || b == b'\t' || b == b'\n' || b == b'\r' {
                    i += 1;
                    continue;
                }
                let start = i;
                if b.is_ascii_punctuation() {
                    i += 1;
                } else {
                    while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                        i += 1;
                    }
                }
                let word = &segment[start..i];
                let key: &str = if self.normalizer.lowercase && word.bytes().any(|c| c.is_ascii_uppercase()) {
                    scratch.lowered.clear();
                    scratch.lowered.push_str(word);
                    scratch.lowered.make_ascii_lowercase();
                    &scratch.lowered
                } else {
                    word
                };
                let offset = base + start;
                self.cached_word_targets(
                    key,
                    i - start,
                    slot_of,
                    cache,
                    &mut scratch.piece,
                    &mut scratch.bounds,
                    &mut scratch.pieces,
                    |slot, a, b| hits.push((slot, offset + a as usize, offset + b as usize)),
                );
            }
            return;
        }
        self.normalize_segment(segment, base, scratch);
        let Scratch { normalized, char_starts, align, words, piece, bounds, pieces, .. } = scratch;
        for &(first, last) in words.iter() {
            let (first, last) = (first as usize, last as usize);
            let word = &normalized[char_starts[first] as usize..char_starts[last] as usize];
            self.cached_word_targets(word, last - first, slot_of, cache, piece, bounds, pieces, |slot, a, b| {
                hits.push((slot, align[first + a as usize].0 as usize, align[first + b as usize - 1].1 as usize))
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn cached_word_targets<F: FnMut(u32, u32, u32)>(
        &self,
        word: &str,
        n_chars: usize,
        slot_of: &[u32],
        cache: &mut WordCache,
        piece: &mut String,
        bounds: &mut Vec<u32>,
        pieces: &mut Vec<(u32, u32, u32)>,
        mut emit: F,
    ) {
        if let Some(found) = cache.map.get(word) {
            for &(slot, a, b) in found.iter() {
                emit(slot, a, b);
            }
            return;
        }
        pieces.clear();
        self.word_pieces(word, n_chars, piece, bounds, pieces);
        let found: Box<[(u32, u32, u32)]> = pieces
            .iter()
            .filter_map(|&(id, a, b)| {
                let slot = slot_of.get(id as usize).copied().unwrap_or(u32::MAX);
                (slot != u32::MAX).then_some((slot, a, b))
            })
            .collect();
        for &(slot, a, b) in found.iter() {
            emit(slot, a, b);
        }
        if cache.map.len() >= WordCache::MAX_WORDS {
            cache.map.clear(); // bound memory on corpora with huge vocabularies (ids, URLs, ...)
        }
        cache.map.insert(word.into(), found);
    }
}

/// (target slot, first char, end char) of the target pieces of one word.
type WordTargets = Box<[(u32, u32, u32)]>;

/// Target pieces of already-seen normalised words (per thread, per scan).
#[derive(Default)]
pub struct WordCache {
    map: HashMap<Box<str>, WordTargets, FxBuildHasher>,
}

impl WordCache {
    const MAX_WORDS: usize = 1 << 20;
}

/// FxHash (Firefox/rustc's multiplicative hash): several times faster than SipHash on short words;
/// hash flooding is not a concern for a local corpus scan.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(byte as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub type FxBuildHasher = std::hash::BuildHasherDefault<FxHasher>;

/// Reusable buffers for `tokenize` (one per thread).
#[derive(Default)]
pub struct Scratch {
    normalized: String,
    char_starts: Vec<u32>,
    align: Vec<(u32, u32)>,
    words: Vec<(u32, u32)>,
    piece: String,
    bounds: Vec<u32>,
    pieces: Vec<(u32, u32, u32)>,
    lowered: String,
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
    fn rejects_what_it_cannot_reproduce() {
        let json = r#"{"normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}"#;
        let error = BertWordPiece::from_tokenizer_json(json).err().unwrap();
        assert!(error.0.starts_with("unsupported tokenizer: normalizer must be BertNormalizer"), "{error}");
        let json = r#"{"added_tokens": [{"id": 0, "content": "[UNK]", "lstrip": true}], "normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}"#;
        let error = BertWordPiece::from_tokenizer_json(json).err().unwrap();
        assert!(error.0.contains("lstrip=true"), "{error}");
    }
}
