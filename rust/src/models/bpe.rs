//! The BPE model over byte-level pre-tokens (Hugging Face `tokenizers`' `BPE`, as byte-level tokenizers
//! configure it): a pre-token's bytes start as one symbol each (the byte-level character of the byte), and
//! merges are applied by rank, lowest first, leftmost first among equal ranks.
//!
//! The merge loop is the reference's (`Word::merge_all`): a priority queue of (rank, position) entries;
//! an entry is applied if its position still starts a pair whose merge gives the entry's token, and
//! each merge queues the new pairs with its neighbours. With `ignore_merges`, a pre-token that is a
//! vocabulary entry as a whole is that one token.
//!
//! What is reproduced, and refused otherwise (`Error::UnsupportedTokenizer`): every byte's character is in
//! the vocabulary (so neither `unk_token` nor `fuse_unk` ever applies: a byte-level vocabulary trained by
//! `tokenizers` has all 256), no `dropout` (null or 0), no `byte_fallback`, empty or null
//! `continuing_subword_prefix` and `end_of_word_suffix`. Merges in both tokenizer.json formats: `"a b"`
//! strings (as `merges.txt`, `#version` lines skipped) or `["a", "b"]` pairs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::pre_tokenizers::byte_level::byte_char;
use crate::utils::hash::FxHashMap;

pub struct Bpe {
    vocab: FxHashMap<String, u32>,
    /// (left id, right id) -> (rank, merged id); a pair listed twice keeps its last rank, as the reference.
    merges: FxHashMap<(u32, u32), (u32, u32)>,
    /// The id of each byte's byte-level character.
    byte_ids: [u32; 256],
    pub ignore_merges: bool,
}

/// Reusable buffers of `Bpe::tokenize`.
#[derive(Default)]
pub struct BpeBuffers {
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<(u32, u32, u32)>>,
    text: String,
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    prev: i32,
    next: i32,
    /// Bytes covered; 0 once merged into its left neighbour.
    len: u32,
}

impl Bpe {
    /// From the `model` object of a tokenizer.json.
    pub fn from_json(model: &Value) -> Result<Self> {
        match model.get("type").and_then(Value::as_str) {
            Some("BPE") => {}
            None if model.get("merges").is_some() => {}
            _ => {
                return Err(Error::unsupported(format!(
                    "model must be BPE, got {}",
                    model.get("type").unwrap_or(&Value::Null)
                )))
            }
        }
        match model.get("dropout") {
            None | Some(Value::Null) => {}
            Some(p) if p.as_f64() == Some(0.0) => {}
            Some(p) => {
                return Err(Error::unsupported(format!("BPE dropout {p} (merges skipped at random) is not reproduced")))
            }
        }
        if model.get("byte_fallback").and_then(Value::as_bool) == Some(true) {
            return Err(Error::unsupported("BPE byte_fallback (<0x..> tokens) is not reproduced"));
        }
        for key in ["continuing_subword_prefix", "end_of_word_suffix"] {
            match model.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => {}
                Some(other) => return Err(Error::unsupported(format!("BPE {key} {other} is not reproduced"))),
            }
        }
        let ignore_merges = match model.get("ignore_merges") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(Error::InvalidTokenizer(format!("`ignore_merges` should be a boolean, got {other}")))
            }
        };

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

        let mut byte_ids = [0u32; 256];
        let mut missing = Vec::new();
        for b in 0..=255u8 {
            match vocab.get(byte_char(b).to_string().as_str()) {
                Some(&id) => byte_ids[b as usize] = id,
                None => missing.push(format!("0x{b:02X}")),
            }
        }
        if !missing.is_empty() {
            return Err(Error::unsupported(format!(
                "the vocabulary lacks the byte-level characters of {} bytes ({}{}): the reference drops such \
                 bytes or makes them unk_token, which is not reproduced",
                missing.len(),
                missing[..missing.len().min(5)].join(", "),
                if missing.len() > 5 { ", ..." } else { "" }
            )));
        }

        let pairs = parse_merges(model.get("merges"))?;
        let mut merges = FxHashMap::with_capacity_and_hasher(pairs.len(), Default::default());
        let id_of = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| Error::InvalidTokenizer(format!("merge token {token:?} is not in the vocabulary")))
        };
        for (rank, (a, b)) in pairs.iter().enumerate() {
            let merged = id_of(&format!("{a}{b}"))?;
            merges.insert((id_of(a)?, id_of(b)?), (rank as u32, merged));
        }
        Ok(Bpe { vocab, merges, byte_ids, ignore_merges })
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    pub fn vocab(&self) -> impl Iterator<Item = (&str, u32)> {
        self.vocab.iter().map(|(t, id)| (t.as_str(), *id))
    }

    /// The tokens of one pre-token given by its bytes: appends (id, first byte, end byte).
    pub fn tokenize(&self, bytes: &[u8], buffers: &mut BpeBuffers, out: &mut Vec<(u32, u32, u32)>) {
        if bytes.is_empty() {
            return;
        }
        if self.ignore_merges {
            buffers.text.clear();
            buffers.text.extend(bytes.iter().map(|&b| byte_char(b)));
            if let Some(&id) = self.vocab.get(buffers.text.as_str()) {
                out.push((id, 0, bytes.len() as u32));
                return;
            }
        }
        if bytes.len() == 1 {
            out.push((self.byte_ids[bytes[0] as usize], 0, 1));
            return;
        }
        let BpeBuffers { symbols, queue, .. } = buffers;
        symbols.clear();
        queue.clear();
        let n = bytes.len() as i32;
        symbols.extend(bytes.iter().enumerate().map(|(i, &b)| Symbol {
            id: self.byte_ids[b as usize],
            prev: i as i32 - 1,
            next: if i as i32 + 1 < n { i as i32 + 1 } else { -1 },
            len: 1,
        }));
        for i in 0..symbols.len() - 1 {
            if let Some(&(rank, merged)) = self.merges.get(&(symbols[i].id, symbols[i + 1].id)) {
                queue.push(Reverse((rank, i as u32, merged)));
            }
        }
        while let Some(Reverse((_, pos, merged))) = queue.pop() {
            let pos = pos as usize;
            if symbols[pos].len == 0 || symbols[pos].next == -1 {
                continue;
            }
            let next = symbols[pos].next as usize;
            let right = symbols[next];
            // A stale entry: the pair at `pos` is no longer one that merges into `merged`.
            match self.merges.get(&(symbols[pos].id, right.id)) {
                Some(&(_, id)) if id == merged => {}
                _ => continue,
            }
            symbols[pos].id = merged;
            symbols[pos].len += right.len;
            symbols[pos].next = right.next;
            symbols[next].len = 0;
            if right.next >= 0 {
                symbols[right.next as usize].prev = pos as i32;
            }
            let current = symbols[pos];
            if current.prev >= 0 {
                let prev = current.prev as usize;
                if let Some(&(rank, id)) = self.merges.get(&(symbols[prev].id, current.id)) {
                    queue.push(Reverse((rank, prev as u32, id)));
                }
            }
            if current.next >= 0 {
                if let Some(&(rank, id)) = self.merges.get(&(current.id, symbols[current.next as usize].id)) {
                    queue.push(Reverse((rank, pos as u32, id)));
                }
            }
        }
        let mut start = 0;
        for symbol in symbols.iter().filter(|s| s.len > 0) {
            out.push((symbol.id, start, start + symbol.len));
            start += symbol.len;
        }
    }
}

/// The merges of a tokenizer.json, in rank order.
fn parse_merges(merges: Option<&Value>) -> Result<Vec<(String, String)>> {
    let items =
        merges.and_then(Value::as_array).ok_or_else(|| Error::InvalidTokenizer("model.merges missing".to_string()))?;
    let bad = |item: &Value| Error::InvalidTokenizer(format!("bad merge {item}: expected \"a b\" or [\"a\", \"b\"]"));
    if items.iter().all(Value::is_array) {
        items
            .iter()
            .map(|item| match item.as_array().map(Vec::as_slice) {
                Some([Value::String(a), Value::String(b)]) => Ok((a.clone(), b.clone())),
                _ => Err(bad(item)),
            })
            .collect()
    } else {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let line = item.as_str().ok_or_else(|| bad(item))?;
            if line.starts_with("#version") {
                continue;
            }
            let mut parts = line.split(' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), None) => out.push((a.to_string(), b.to_string())),
                _ => return Err(bad(item)),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pre_tokenizers::byte_level::byte_char;

    fn model(merges: Value, extra: &[(&str, u32)]) -> Result<Bpe> {
        let mut vocab: serde_json::Map<String, Value> =
            (0..=255u8).map(|b| (byte_char(b).to_string(), Value::from(b as u32))).collect();
        for (token, id) in extra {
            vocab.insert(token.to_string(), Value::from(*id));
        }
        Bpe::from_json(
            &serde_json::json!({"type": "BPE", "dropout": null, "unk_token": null, "vocab": vocab, "merges": merges}),
        )
    }

    fn pieces(bpe: &Bpe, text: &str) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        bpe.tokenize(text.as_bytes(), &mut BpeBuffers::default(), &mut out);
        out
    }

    #[test]
    fn merges_by_rank_then_leftmost() {
        let extra = [("ab", 300), ("bc", 301), ("abc", 302), ("aa", 303), ("Ġa", 304)];
        // "b c" ranks before "a b": "abc" -> a, bc (no merge a+bc).
        let bpe = model(serde_json::json!(["b c", "a b", "ab c", "a a", "Ġ a"]), &extra).unwrap();
        assert_eq!(pieces(&bpe, "abc"), vec![(97, 0, 1), (301, 1, 3)]);
        assert_eq!(pieces(&bpe, "ab"), vec![(300, 0, 2)]);
        // Overlapping pairs: the leftmost first.
        assert_eq!(pieces(&bpe, "aaa"), vec![(303, 0, 2), (97, 2, 3)]);
        assert_eq!(pieces(&bpe, " a"), vec![(304, 0, 2)]);
        // Pair format, same ranks.
        let pairs = model(serde_json::json!([["a", "b"], ["b", "c"], ["ab", "c"]]), &extra).unwrap();
        assert_eq!(pieces(&pairs, "abc"), vec![(302, 0, 3)]);
        // Bytes of a multi-byte character are symbols of their own.
        assert_eq!(pieces(&bpe, "é"), vec![(0xC3, 0, 1), (0xA9, 1, 2)]);
    }

    #[test]
    fn refuses_what_it_does_not_reproduce() {
        let unsupported = |m: Value| match Bpe::from_json(&m) {
            Err(Error::UnsupportedTokenizer { reason, .. }) => reason,
            other => panic!("{:?}", other.err()),
        };
        let r = unsupported(serde_json::json!({"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}));
        assert!(r.contains("dropout"), "{r}");
        let r = unsupported(serde_json::json!({"type": "BPE", "byte_fallback": true, "vocab": {}, "merges": []}));
        assert!(r.contains("byte_fallback"), "{r}");
        let r = unsupported(
            serde_json::json!({"type": "BPE", "continuing_subword_prefix": "##", "vocab": {}, "merges": []}),
        );
        assert!(r.contains("continuing_subword_prefix"), "{r}");
        let r = unsupported(serde_json::json!({"type": "BPE", "vocab": {"a": 0}, "merges": []}));
        assert!(r.contains("lacks the byte-level characters of 255 bytes"), "{r}");
        assert!(matches!(model(serde_json::json!(["a q"]), &[]), Err(Error::InvalidTokenizer(_))));
        assert!(matches!(model(serde_json::json!(["a b c"]), &[]), Err(Error::InvalidTokenizer(_))));
    }
}
