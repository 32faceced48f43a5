//! The corpus scan: a reader thread streams batches of whole lines; each batch is split into
//! sentences and tokenized in parallel (rayon); hits are merged into one bottom-k sample per target.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use flate2::read::MultiGzDecoder;
use rayon::prelude::*;

use crate::sampling::{priority, BottomK};
use crate::text::{decode_lossy, split_sentences};
use crate::wordpiece::{BertWordPiece, Scratch, WordCache};

#[derive(Debug, Clone)]
pub struct Options {
    pub max_per_token: usize,
    pub seed: u64,
    pub max_context_chars: usize,
    /// 0: all cores.
    pub num_threads: usize,
    /// Bytes of text per parallel batch.
    pub batch_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_per_token: 20, seed: 0, max_context_chars: 1000, num_threads: 0, batch_bytes: 4 << 20 }
    }
}

/// What a scan read (same meaning as `QikFindStats` on the Python side).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub files: u64,
    pub lines: u64,
    pub bytes: u64,
    pub sentences: u64,
    pub replacement_chars: u64,
    pub chunked_sentences: u64,
    pub candidate_sentences: u64,
}

impl Stats {
    pub fn as_pairs(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("files", self.files),
            ("lines", self.lines),
            ("bytes", self.bytes),
            ("sentences", self.sentences),
            ("replacement_chars", self.replacement_chars),
            ("chunked_sentences", self.chunked_sentences),
            ("candidate_sentences", self.candidate_sentences),
        ]
    }
}

/// One sampled context; `start`/`end` are code point offsets into `sentence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub sentence: String,
    pub start: usize,
    pub end: usize,
    pub sentence_index: u64,
}

#[derive(Debug)]
pub struct FindError(pub String);

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for FindError {}

// -------------------------------------------------------------------------------------------- prefilter

/// Discards sentences that cannot produce any target: a token's characters (without the `##`
/// prefix) must occur in the normalised sentence. Exact: only ever says "no" when tokenizing would.
pub struct Prefilter {
    automaton: Option<AhoCorasick>,
}

impl Prefilter {
    pub fn new(tokenizer: &BertWordPiece, targets: &[u32]) -> Self {
        let mut patterns = Vec::with_capacity(targets.len());
        for &id in targets {
            if id == tokenizer.unk_id {
                // [UNK] has no surface: every sentence is a candidate.
                return Prefilter { automaton: None };
            }
            let token = match tokenizer.id_to_token(id) {
                Some(token) => token,
                None => continue,
            };
            if tokenizer.is_added_token(id) {
                patterns.push(token.to_string());
            } else {
                patterns.push(token.strip_prefix(tokenizer.continuing_prefix.as_str()).unwrap_or(token).to_string());
            }
        }
        let automaton =
            AhoCorasickBuilder::new().ascii_case_insensitive(tokenizer.normalizer.lowercase).build(&patterns);
        Prefilter { automaton: Some(automaton) }
    }

    #[inline]
    pub fn is_candidate(
        &self,
        tokenizer: &BertWordPiece,
        sentence: &str,
        plain_ascii: bool,
        normalized: &mut String,
    ) -> bool {
        let automaton = match &self.automaton {
            Some(automaton) => automaton,
            None => return true,
        };
        // Printable ASCII with tab/newline/CR normalises to itself lowercased (whitespace to spaces,
        // which no vocabulary piece contains): search the raw bytes, ASCII-case-insensitively when the
        // tokenizer lowercases.
        let raw_match = automaton.is_match(sentence);
        if raw_match || plain_ascii {
            return raw_match;
        }
        tokenizer.normalizer.normalize_into(sentence, normalized);
        automaton.is_match(normalized.as_str())
    }
}

// ---------------------------------------------------------------------------------------------- reading

struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

enum Batch {
    File,
    Lines(Vec<u8>),
}

fn read_file(
    path: &Path,
    batch_bytes: usize,
    raw_bytes: &Arc<AtomicU64>,
    send: &dyn Fn(Batch) -> bool,
) -> Result<(), FindError> {
    let error = |e: std::io::Error| FindError(format!("{}: {e}", path.display()));
    let file = File::open(path).map_err(error)?;
    let counting = CountingReader { inner: file, counter: raw_bytes.clone() };
    let mut reader: Box<dyn Read> = if path.extension().map_or(false, |e| e == "gz") {
        Box::new(MultiGzDecoder::new(BufReader::with_capacity(1 << 16, counting)))
    } else {
        Box::new(counting)
    };
    if !send(Batch::File) {
        return Ok(());
    }
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buffer = std::mem::take(&mut carry);
        buffer.reserve(batch_bytes);
        let read = reader.by_ref().take(batch_bytes as u64).read_to_end(&mut buffer).map_err(error)?;
        if read == 0 {
            if !buffer.is_empty() && !send(Batch::Lines(buffer)) {
                return Ok(());
            }
            return Ok(());
        }
        match memchr::memrchr(b'\n', &buffer) {
            Some(position) => {
                carry = buffer[position + 1..].to_vec();
                buffer.truncate(position + 1);
                if !send(Batch::Lines(buffer)) {
                    return Ok(());
                }
            }
            None => carry = buffer, // a line longer than a batch: keep reading
        }
    }
}

// ------------------------------------------------------------------------------------------------- scan

struct Hit {
    slot: u32,
    priority: u64,
    index: u64,
    sentence: String,
    start: usize,
    end: usize,
}

/// A decoded line, its sentences (byte ranges), how many were chunked, and U+FFFD replacements.
type SplitLine<'a> = (Cow<'a, str>, Vec<(usize, usize)>, usize, usize);

/// Per-thread state, kept across batches of one scan (the word cache is what makes it pay).
#[derive(Default)]
struct Worker {
    generation: u64,
    scratch: Scratch,
    cache: WordCache,
    found: Vec<(u32, usize, usize)>,
    normalized: String,
    seen: Vec<u32>,
}

thread_local! {
    static WORKER: std::cell::RefCell<Worker> = std::cell::RefCell::new(Worker::default());
}

static SCAN_GENERATION: AtomicU64 = AtomicU64::new(1);

/// Printable ASCII plus tab, newline and carriage return: text that BERT's normaliser only lowercases.
#[inline]
fn is_plain_ascii(text: &str) -> bool {
    text.bytes().all(|b| (0x20..0x7f).contains(&b) || b == b'\t' || b == b'\n' || b == b'\r')
}

/// Sample up to `options.max_per_token` contexts for each target id. `progress` is called after each
/// batch with the on-disk bytes read so far; an `Err` from it aborts the scan.
pub fn find_contexts(
    paths: &[PathBuf],
    tokenizer: &BertWordPiece,
    targets: &[u32],
    options: &Options,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<(HashMap<u32, Vec<Found>>, Stats), FindError> {
    if options.max_context_chars == 0 {
        return Err(FindError("max_context_chars must be >= 1".to_string()));
    }
    for path in paths {
        if !path.is_file() {
            return Err(FindError(format!("corpus file not found: {}", path.display())));
        }
    }
    let mut unique_targets: Vec<u32> = Vec::with_capacity(targets.len());
    for &t in targets {
        if (t as usize) >= tokenizer.vocab_size() || tokenizer.id_to_token(t).is_none() {
            return Err(FindError(format!("target id {t} is not in the tokenizer's vocabulary")));
        }
        if !unique_targets.contains(&t) {
            unique_targets.push(t);
        }
    }
    // slot_of[id] = position in unique_targets, or u32::MAX.
    let mut slot_of = vec![u32::MAX; tokenizer.vocab_size()];
    for (slot, &t) in unique_targets.iter().enumerate() {
        slot_of[t as usize] = slot as u32;
    }
    let prefilter = Prefilter::new(tokenizer, &unique_targets);
    let mut samples: Vec<BottomK<Found>> = unique_targets.iter().map(|_| BottomK::new(options.max_per_token)).collect();
    // Largest kept priority per target once its sample is full (None: not full). Read by the workers
    // to skip hits that cannot enter; only ever decreases, so a stale value is still a safe bound.
    let mut thresholds: Vec<Option<u64>> = samples.iter().map(|s| s.threshold()).collect();

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.num_threads)
        .build()
        .map_err(|e| FindError(format!("cannot start the thread pool: {e}")))?;

    let generation = SCAN_GENERATION.fetch_add(1, Ordering::Relaxed);
    let mut stats = Stats::default();
    let raw_bytes = Arc::new(AtomicU64::new(0));
    let (sender, receiver) = sync_channel::<Result<Batch, FindError>>(2);
    let reader_paths = paths.to_vec();
    let reader_bytes = raw_bytes.clone();
    let batch_bytes = options.batch_bytes.max(1);
    let reader = std::thread::spawn(move || {
        let send = |batch: Batch| sender.send(Ok(batch)).is_ok();
        for path in &reader_paths {
            if let Err(error) = read_file(path, batch_bytes, &reader_bytes, &send) {
                let _ = sender.send(Err(error));
                return;
            }
        }
    });

    let mut result = Ok(());
    for message in receiver.iter() {
        let bytes = match message {
            Ok(Batch::File) => {
                stats.files += 1;
                continue;
            }
            Ok(Batch::Lines(bytes)) => bytes,
            Err(error) => {
                result = Err(error);
                break;
            }
        };
        stats.bytes += bytes.len() as u64;
        let hits = pool.install(|| {
            process_batch(
                &bytes,
                tokenizer,
                &prefilter,
                &slot_of,
                &unique_targets,
                &thresholds,
                options,
                generation,
                &mut stats,
            )
        });
        for hit in hits {
            let sample = &mut samples[hit.slot as usize];
            sample.offer(
                hit.priority,
                hit.index,
                Found { sentence: hit.sentence, start: hit.start, end: hit.end, sentence_index: hit.index },
            );
            thresholds[hit.slot as usize] = sample.threshold();
        }
        if let Err(message) = progress(raw_bytes.load(Ordering::Relaxed)) {
            result = Err(FindError(message));
            break;
        }
    }
    drop(receiver);
    let _ = reader.join();
    result?;

    let mut out = HashMap::with_capacity(unique_targets.len());
    for (t, sample) in unique_targets.iter().zip(samples) {
        out.insert(*t, sample.into_sorted_by_index().into_iter().map(|(_, found)| found).collect());
    }
    Ok((out, stats))
}

#[allow(clippy::too_many_arguments)]
fn process_batch(
    bytes: &[u8],
    tokenizer: &BertWordPiece,
    prefilter: &Prefilter,
    slot_of: &[u32],
    targets: &[u32],
    thresholds: &[Option<u64>],
    options: &Options,
    generation: u64,
    stats: &mut Stats,
) -> Vec<Hit> {
    // Lines (without their '\n'); a final line without '\n' counts too.
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        lines.push(&bytes[start..end]);
        start = end + 1;
    }
    if start < bytes.len() {
        lines.push(&bytes[start..]);
    }
    stats.lines += lines.len() as u64;

    // Phase 1: decode and split, so that every sentence gets its global index.
    let split: Vec<SplitLine> = lines
        .par_iter()
        .map(|line| {
            let (text, replacements) = decode_lossy(line);
            let mut ranges = Vec::new();
            let chunked = split_sentences(&text, options.max_context_chars, &mut ranges);
            (text, ranges, chunked, replacements)
        })
        .collect();
    let mut bases = Vec::with_capacity(split.len());
    for (_, ranges, chunked, replacements) in &split {
        bases.push(stats.sentences);
        stats.sentences += ranges.len() as u64;
        stats.chunked_sentences += *chunked as u64;
        stats.replacement_chars += *replacements as u64;
    }

    // Phase 2: prefilter, find the targets of candidates, keep hits that can still enter their sample.
    let results: Vec<(Vec<Hit>, u64)> = split
        .par_iter()
        .zip(bases.par_iter())
        .map(|((text, ranges, _, _), base)| {
            WORKER.with(|cell| {
                let mut guard = cell.borrow_mut();
                let worker = &mut *guard;
                if worker.generation != generation {
                    // A new scan (other tokenizer or targets): forget the cached words.
                    *worker = Worker { generation, ..Worker::default() };
                }
                let mut hits = Vec::new();
                let mut candidates = 0;
                for (offset, &(a, b)) in ranges.iter().enumerate() {
                    let sentence = &text[a..b];
                    let plain_ascii = is_plain_ascii(sentence);
                    if !prefilter.is_candidate(tokenizer, sentence, plain_ascii, &mut worker.normalized) {
                        continue;
                    }
                    candidates += 1;
                    let index = base + offset as u64;
                    tokenizer.find_targets(
                        sentence,
                        plain_ascii,
                        slot_of,
                        &mut worker.cache,
                        &mut worker.scratch,
                        &mut worker.found,
                    );
                    worker.seen.clear();
                    for &(slot, start, end) in &worker.found {
                        if worker.seen.contains(&slot) {
                            continue;
                        }
                        worker.seen.push(slot);
                        let p = priority(options.seed, targets[slot as usize], index);
                        // Later sentences lose ties, so p >= the kept maximum can never enter.
                        if let Some(threshold) = thresholds[slot as usize] {
                            if p >= threshold {
                                continue;
                            }
                        }
                        let start_char = sentence[..start].chars().count();
                        let end_char = start_char + sentence[start..end].chars().count();
                        hits.push(Hit {
                            slot,
                            priority: p,
                            index,
                            sentence: sentence.to_string(),
                            start: start_char,
                            end: end_char,
                        });
                    }
                }
                (hits, candidates)
            })
        })
        .collect();
    let mut hits = Vec::new();
    for (batch_hits, candidates) in results {
        stats.candidate_sentences += candidates;
        hits.extend(batch_hits);
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn fixture(name: &str) -> (PathBuf, Vec<PathBuf>, BertWordPiece) {
        let dir = std::env::temp_dir().join(format!("qikfind-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nalpha\nbeta\ngamma\n##s\n.\n!\n1\n")
            .unwrap();
        let plain = dir.join("a.txt");
        std::fs::write(&plain, b"Alpha beta. Gamma alphas!\n\nbeta \xff beta\r\nno match here").unwrap();
        let gz = dir.join("b.txt.gz");
        let mut encoder = flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::default());
        encoder.write_all("ÁLPHA. 1 beta\n".as_bytes()).unwrap();
        encoder.finish().unwrap();
        let tokenizer = BertWordPiece::from_dir(&dir).unwrap();
        (dir, vec![plain, gz], tokenizer)
    }

    fn scan(
        paths: &[PathBuf],
        tokenizer: &BertWordPiece,
        targets: &[u32],
        options: &Options,
    ) -> (HashMap<u32, Vec<Found>>, Stats) {
        find_contexts(paths, tokenizer, targets, options, &mut |_| Ok(())).unwrap()
    }

    #[test]
    fn finds_every_occurrence_with_code_point_spans_and_global_indices() {
        let (dir, paths, tokenizer) = fixture("all");
        let (alpha, beta, s) = (5, 6, 8);
        let options = Options { max_per_token: 100, ..Options::default() };
        let (found, stats) = scan(&paths, &tokenizer, &[alpha, beta, s, 7, 10, 4], &options);
        let summary = |t: u32| -> Vec<(u64, String)> {
            found[&t]
                .iter()
                .map(|f| (f.sentence_index, f.sentence.chars().skip(f.start).take(f.end - f.start).collect()))
                .collect()
        };
        // Sentences: 0 "Alpha beta." 1 "Gamma alphas!" 2 "beta \u{FFFD} beta" 3 "no match here" 4 "ÁLPHA." 5 "1 beta"
        assert_eq!(summary(alpha), vec![(0, "Alpha".into()), (1, "alpha".into()), (4, "ÁLPHA".into())]);
        assert_eq!(summary(beta), vec![(0, "beta".into()), (2, "beta".into()), (5, "beta".into())]);
        assert_eq!(summary(s), vec![(1, "s".into())]);
        assert_eq!(summary(7), vec![(1, "Gamma".into())]);
        assert_eq!(summary(10), vec![(1, "!".into())]);
        assert!(found[&4].is_empty()); // [MASK] never occurs
        assert_eq!(
            stats,
            Stats {
                files: 2,
                lines: 5,
                bytes: 68,
                sentences: 6,
                replacement_chars: 1,
                chunked_sentences: 0,
                candidate_sentences: stats.candidate_sentences
            }
        );
        assert!(stats.candidate_sentences < stats.sentences, "the prefilter skips 'no match here'");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn sample_does_not_depend_on_threads_or_batching() {
        let (dir, paths, tokenizer) = fixture("threads");
        let mut reference = None;
        for (threads, batch_bytes) in [(1, 1 << 20), (2, 1 << 20), (2, 7), (1, 3)] {
            let options =
                Options { max_per_token: 1, seed: 3, num_threads: threads, batch_bytes, ..Options::default() };
            let result = scan(&paths, &tokenizer, &[5, 6], &options);
            assert_eq!(result.0[&6].len(), 1);
            match &reference {
                None => reference = Some(result),
                Some(expected) => assert_eq!(&result, expected),
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reports_bad_inputs() {
        let (dir, paths, tokenizer) = fixture("errors");
        let missing = vec![dir.join("missing.txt")];
        let error = find_contexts(&missing, &tokenizer, &[5], &Options::default(), &mut |_| Ok(())).unwrap_err();
        assert!(error.0.contains("missing.txt"), "{error}");
        let error = find_contexts(&paths, &tokenizer, &[999], &Options::default(), &mut |_| Ok(())).unwrap_err();
        assert!(error.0.contains("999"), "{error}");
        let error =
            find_contexts(&paths, &tokenizer, &[5], &Options::default(), &mut |_| Err("stop".into())).unwrap_err();
        assert_eq!(error.0, "stop");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
