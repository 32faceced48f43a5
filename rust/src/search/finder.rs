//! The corpus scan: a reader thread streams batches of whole lines; each batch is cut into chunks
//! that are split into sentences (phase 1), then tokenized (phase 2) in parallel (rayon), phase 1 of
//! one batch overlapping phase 2 of the previous one. Threads offer their hits straight into one
//! bottom-k sample per target, behind one lock per target.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::search::reader::{check_file, read_file, Batch};
use crate::search::sampling::{priority, BottomK};
use crate::search::target::{unique_targets, SearchBuffers, TargetSearch};
use crate::search::text::{decode_lossy, split_sentences};
use crate::tokenizer::Tokenizer;

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

impl Options {
    pub fn validate(&self) -> Result<()> {
        if self.max_context_chars == 0 {
            return Err(Error::InvalidArgument("max_context_chars must be >= 1".to_string()));
        }
        if self.batch_bytes == 0 {
            return Err(Error::InvalidArgument("batch_bytes must be >= 1".to_string()));
        }
        Ok(())
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

// ------------------------------------------------------------------------------------------------- scan

/// Bytes of text per parallel task: small enough that both phases of a batch balance across
/// threads, large enough that a task's overhead (one allocation, one lock) does not show.
const CHUNK_BYTES: usize = 64 << 10;

/// Whole lines of a batch (`range`), with the byte ranges of their sentences in the decoded text.
struct Chunk {
    range: (usize, usize),
    /// The decoded text when the bytes are not valid UTF-8; otherwise the bytes are the text.
    replaced: Option<String>,
    sentences: Vec<(usize, usize)>,
    lines: u64,
    chunked: u64,
    replacements: u64,
}

impl Chunk {
    fn text<'a>(&'a self, batch: &'a [u8]) -> &'a str {
        match &self.replaced {
            Some(text) => text,
            None => std::str::from_utf8(&batch[self.range.0..self.range.1]).expect("validated by split_chunk"),
        }
    }
}

/// A batch after phase 1: every sentence has its global index (`bases[i]`: that of chunk i's first).
struct SplitBatch {
    bytes: Vec<u8>,
    chunks: Vec<Chunk>,
    bases: Vec<u64>,
}

/// Cut a batch of whole lines into pieces of about `CHUNK_BYTES` that end at a line end.
fn chunk_bounds(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut bounds = Vec::with_capacity(bytes.len() / CHUNK_BYTES + 1);
    let mut start = 0;
    while start < bytes.len() {
        let end = match bytes.get(start + CHUNK_BYTES..).and_then(|rest| memchr::memchr(b'\n', rest)) {
            Some(position) => start + CHUNK_BYTES + position + 1,
            None => bytes.len(),
        };
        bounds.push((start, end));
        start = end;
    }
    bounds
}

/// Phase 1 of a batch, for one chunk: decode and split into sentences. Decoding a chunk at once is
/// decoding each of its lines: '\n' is ASCII, so no invalid sequence spans a line end.
fn split_chunk(batch: &[u8], range: (usize, usize), max_context_chars: usize) -> Chunk {
    let (text, replacements) = decode_lossy(&batch[range.0..range.1]);
    let mut sentences = Vec::new();
    let (mut lines, mut chunked) = (0, 0);
    let mut line_start = 0;
    while line_start < text.len() {
        // A final line without '\n' counts too.
        let line_end = memchr::memchr(b'\n', &text.as_bytes()[line_start..]).map_or(text.len(), |p| line_start + p);
        let first = sentences.len();
        chunked += split_sentences(&text[line_start..line_end], max_context_chars, &mut sentences) as u64;
        for range in &mut sentences[first..] {
            *range = (range.0 + line_start, range.1 + line_start);
        }
        lines += 1;
        line_start = line_end + 1;
    }
    let replaced = match text {
        Cow::Owned(text) => Some(text),
        Cow::Borrowed(_) => None,
    };
    Chunk { range, replaced, sentences, lines, chunked, replacements: replacements as u64 }
}

/// Per-thread state, kept across the batches of one scan (the word cache is what makes it pay).
#[derive(Default)]
struct Worker {
    buffers: SearchBuffers,
    found: Vec<(u32, usize, usize)>,
    seen: Vec<u32>,
    candidates: u64,
}

/// The samples, one lock per target, so that threads offer hits directly (no serial merge), and
/// a lock-free bound per target that skips most hits without locking.
struct Samples {
    samples: Vec<Mutex<BottomK<Found>>>,
    /// The largest kept priority once a sample is full, u64::MAX before. It only decreases, so a
    /// stale value is still a valid bound: a priority above it can never enter.
    bounds: Vec<AtomicU64>,
}

impl Samples {
    fn new(targets: usize, k: usize) -> Self {
        let samples: Vec<Mutex<BottomK<Found>>> = (0..targets).map(|_| Mutex::new(BottomK::new(k))).collect();
        let bounds = samples.iter().map(|s| AtomicU64::new(bound(&s.lock().unwrap()))).collect();
        Samples { samples, bounds }
    }

    #[inline]
    fn may_accept(&self, slot: u32, priority: u64) -> bool {
        // Equal priorities go on to the exact test: the sentence index breaks the tie.
        priority <= self.bounds[slot as usize].load(Ordering::Relaxed)
    }

    fn offer(&self, slot: u32, priority: u64, found: Found) {
        let mut sample = self.samples[slot as usize].lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        sample.offer(priority, found.sentence_index, found);
        self.bounds[slot as usize].store(bound(&sample), Ordering::Relaxed);
    }
}

fn bound(sample: &BottomK<Found>) -> u64 {
    sample.threshold().unwrap_or(u64::MAX)
}

/// What every task of a scan reads.
struct Scan<'a> {
    search: TargetSearch<'a>,
    targets: Vec<u32>,
    seed: u64,
    samples: Samples,
}

impl Scan<'_> {
    /// Phase 2 of a batch, for one chunk whose first sentence has global index `base`: keep the
    /// sentences in which the tokenizer produces a target, in that target's sample if they enter it.
    fn find_in_chunk(&self, text: &str, sentences: &[(usize, usize)], base: u64, worker: &mut Worker) {
        for (offset, &(a, b)) in sentences.iter().enumerate() {
            let sentence = &text[a..b];
            if !self.search.search(sentence, &mut worker.buffers, &mut worker.found) {
                continue;
            }
            worker.candidates += 1;
            let index = base + offset as u64;
            worker.seen.clear();
            for &(slot, start, end) in &worker.found {
                // The first occurrence of a target in a sentence is its context there.
                if worker.seen.contains(&slot) {
                    continue;
                }
                worker.seen.push(slot);
                let p = priority(self.seed, self.targets[slot as usize], index);
                if !self.samples.may_accept(slot, p) {
                    continue;
                }
                let start_char = sentence[..start].chars().count();
                let end_char = sentence[..end].chars().count();
                let found =
                    Found { sentence: sentence.to_string(), start: start_char, end: end_char, sentence_index: index };
                self.samples.offer(slot, p, found);
            }
        }
    }
}

/// Sample up to `options.max_per_token` contexts for each target id. `progress` is called after each
/// batch with the on-disk bytes read so far; an `Err` from it aborts the scan.
pub fn find_contexts(
    paths: &[PathBuf],
    tokenizer: &Tokenizer,
    targets: &[u32],
    options: &Options,
    progress: &mut dyn FnMut(u64) -> std::result::Result<(), String>,
) -> Result<(HashMap<u32, Vec<Found>>, Stats)> {
    options.validate()?;
    for path in paths {
        check_file(path)?;
    }
    let unique_targets = unique_targets(tokenizer, targets)?;
    let scan = Scan {
        search: TargetSearch::new(tokenizer, &unique_targets),
        samples: Samples::new(unique_targets.len(), options.max_per_token),
        targets: unique_targets,
        seed: options.seed,
    };

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.num_threads)
        .build()
        .map_err(|e| Error::InvalidArgument(format!("cannot start the thread pool: {e}")))?;
    // One per pool thread, indexed by rayon's thread index: never contended, as long as nothing run while
    // it is held (find_in_chunk) calls back into rayon, which could start another task on this thread.
    let workers: Vec<Mutex<Worker>> = (0..pool.current_num_threads()).map(|_| Mutex::default()).collect();

    let mut stats = Stats::default();
    let raw_bytes = Arc::new(AtomicU64::new(0));
    let (sender, receiver) = sync_channel::<Result<Batch>>(2);
    let reader_paths = paths.to_vec();
    let reader_bytes = raw_bytes.clone();
    let batch_bytes = options.batch_bytes;
    let reader = std::thread::spawn(move || {
        let send = |batch: Batch| sender.send(Ok(batch)).is_ok();
        for path in &reader_paths {
            if let Err(error) = read_file(path, batch_bytes, &reader_bytes, &send) {
                let _ = sender.send(Err(error));
                return;
            }
        }
    });

    // A two-stage pipeline: while phase 2 runs on one batch, phase 1 runs on the next, in the same
    // pool, so that neither phase's tail leaves a thread idle.
    let mut split: Option<SplitBatch> = None;
    let mut result = Ok(());
    loop {
        let bytes = match receiver.recv() {
            Ok(Ok(Batch::File)) => {
                stats.files += 1;
                continue;
            }
            Ok(Ok(Batch::Lines(bytes))) => Some(bytes),
            Ok(Err(error)) => {
                result = Err(error);
                break;
            }
            Err(_) => None, // the reader is done
        };
        if bytes.is_none() && split.is_none() {
            break;
        }
        let to_find = split.take();
        let (newly_split, ()) = pool.install(|| {
            rayon::join(
                // Phase 1: decode and split, so that every sentence gets its global index.
                || {
                    bytes.map(|bytes| {
                        let chunks: Vec<Chunk> = chunk_bounds(&bytes)
                            .into_par_iter()
                            .with_max_len(1)
                            .map(|range| split_chunk(&bytes, range, options.max_context_chars))
                            .collect();
                        (bytes, chunks)
                    })
                },
                // Phase 2 (of the previous batch): find the targets and offer the hits to the samples.
                || {
                    if let Some(batch) = &to_find {
                        batch.chunks.par_iter().zip(&batch.bases).with_max_len(1).for_each(|(chunk, &base)| {
                            let thread = rayon::current_thread_index().unwrap_or(0);
                            let mut worker = workers[thread].lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                            scan.find_in_chunk(chunk.text(&batch.bytes), &chunk.sentences, base, &mut worker);
                        })
                    }
                },
            )
        });
        drop(to_find);
        if let Some((bytes, chunks)) = newly_split {
            let mut bases = Vec::with_capacity(chunks.len());
            for chunk in &chunks {
                bases.push(stats.sentences);
                stats.sentences += chunk.sentences.len() as u64;
                stats.lines += chunk.lines;
                stats.chunked_sentences += chunk.chunked;
                stats.replacement_chars += chunk.replacements;
            }
            stats.bytes += bytes.len() as u64;
            split = Some(SplitBatch { bytes, chunks, bases });
        }
        if let Err(message) = progress(raw_bytes.load(Ordering::Relaxed)) {
            result = Err(Error::Aborted(message));
            break;
        }
    }
    drop(receiver);
    let _ = reader.join();
    result?;

    stats.candidate_sentences = workers.into_iter().map(|w| w.into_inner().map_or(0, |w| w.candidates)).sum();
    let mut out = HashMap::with_capacity(scan.targets.len());
    for (t, sample) in scan.targets.iter().zip(scan.samples.samples) {
        let sample = sample.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        out.insert(*t, sample.into_sorted_by_index().into_iter().map(|(_, found)| found).collect());
    }
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    fn fixture(name: &str) -> (PathBuf, Vec<PathBuf>, Tokenizer) {
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
        let tokenizer = Tokenizer::from_dir(&dir).unwrap();
        (dir, vec![plain, gz], tokenizer)
    }

    fn scan(
        paths: &[PathBuf],
        tokenizer: &Tokenizer,
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
    fn chunks_batches_and_threads_do_not_change_sample_or_stats() {
        // Several chunks per batch (CHUNK_BYTES), invalid bytes next to line ends, long lines, CRLF.
        let (dir, _, tokenizer) = fixture("chunks");
        let mut text: Vec<u8> = Vec::new();
        let words: [&[u8]; 10] =
            [b"alpha", b"Beta", b"gamma.", b"alphas", b"x!", b"Gamma", b"\xff", b"\xe2\x82", b"1", b"no"];
        let mut state = 12345u64;
        let mut next = |n: u64| {
            state = crate::search::sampling::splitmix64(state);
            state % n
        };
        while text.len() < 5 * CHUNK_BYTES {
            for _ in 0..next(40) {
                text.extend_from_slice(words[next(words.len() as u64) as usize]);
                text.push(b' ');
            }
            match next(8) {
                0 => text.extend_from_slice(b"\r\n"),
                1 => text.extend_from_slice(b"\xe2\n"), // a truncated sequence right before a line end
                _ => text.push(b'\n'),
            }
        }
        let path = dir.join("big.txt");
        std::fs::write(&path, &text).unwrap();
        let paths = vec![path];
        let mut reference = None;
        for (threads, batch_bytes, max_context_chars) in
            [(1, 1 << 20, 50), (2, 1 << 20, 50), (3, 3 * CHUNK_BYTES / 2, 50), (2, 999, 50), (1, 1, 50)]
        {
            let options = Options { max_per_token: 3, seed: 9, num_threads: threads, batch_bytes, max_context_chars };
            let result = scan(&paths, &tokenizer, &[5, 6, 7, 8, 10, 11], &options);
            match &reference {
                None => {
                    let (found, stats) = &result;
                    assert_eq!(stats.lines, text.iter().filter(|&&b| b == b'\n').count() as u64);
                    assert_eq!(stats.bytes, text.len() as u64);
                    assert!(stats.replacement_chars > 100 && stats.chunked_sentences > 0, "{stats:?}");
                    assert!(found.values().all(|list| list.len() == 3));
                    reference = Some(result);
                }
                Some(expected) => assert_eq!(&result, expected, "threads {threads}, batch {batch_bytes}"),
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_chunk_decodes_and_splits_as_its_lines_do() {
        let bytes = b"Alpha. Beta \xe2\x82\nGamma\xff!\n\n  x. Y\xe2";
        let chunk = split_chunk(bytes, (0, bytes.len()), 1000);
        let text = chunk.text(bytes);
        let mut expected = Vec::new();
        let mut replacements = 0;
        let mut offset = 0;
        for line in bytes.split(|&b| b == b'\n') {
            let (text, count) = decode_lossy(line);
            replacements += count;
            let mut ranges = Vec::new();
            split_sentences(&text, 1000, &mut ranges);
            expected.extend(ranges.iter().map(|&(a, b)| text[a..b].to_string()));
            offset += text.len() + 1;
        }
        assert_eq!(offset - 1, text.len());
        let got: Vec<String> = chunk.sentences.iter().map(|&(a, b)| text[a..b].to_string()).collect();
        assert_eq!(got, expected);
        assert_eq!(got, vec!["Alpha.", "Beta \u{FFFD}", "Gamma\u{FFFD}!", "x.", "Y\u{FFFD}"]);
        assert_eq!((chunk.lines, chunk.replacements), (4, replacements as u64));
        assert_eq!(chunk.replacements, 3);
    }

    #[test]
    fn byte_level_bpe_scan_finds_every_occurrence_the_tokenizer_yields() {
        use crate::tokenizer::{Scratch, Token};
        let (dir, paths, _) = fixture("bpe");
        let merges = [("Ġ", "b"), ("Ġb", "e"), ("Ġbe", "t"), ("Ġbet", "a"), ("a", "l"), ("al", "p"), ("Ã", "ģ")];
        for prefix in [false, true] {
            let roberta =
                serde_json::json!({"type": "RobertaProcessing", "trim_offsets": true, "add_prefix_space": prefix});
            let json = crate::tokenizer::byte_level_bpe::tests::tokenizer_json(&merges, prefix, roberta);
            let tokenizer = Tokenizer::from_tokenizer_json(&json.to_string()).unwrap();
            let targets: Vec<u32> =
                ["Ġbeta", "alp", "Ãģ", "Ġ", "!"].iter().map(|t| tokenizer.token_to_id(t).unwrap()).collect();
            // Brute force: every sentence tokenized, first occurrence of each target.
            let mut expected: HashMap<u32, Vec<(u64, String)>> = targets.iter().map(|&t| (t, Vec::new())).collect();
            let mut index = 0;
            for path in &paths {
                let mut bytes = Vec::new();
                if path.extension().map_or(false, |e| e == "gz") {
                    use std::io::Read;
                    flate2::read::MultiGzDecoder::new(File::open(path).unwrap()).read_to_end(&mut bytes).unwrap();
                } else {
                    bytes = std::fs::read(path).unwrap();
                }
                let (text, _) = decode_lossy(&bytes);
                for line in text.split('\n') {
                    let mut ranges = Vec::new();
                    split_sentences(line, 1000, &mut ranges);
                    for (a, b) in ranges {
                        let sentence = &line[a..b];
                        let mut tokens: Vec<Token> = Vec::new();
                        tokenizer.tokenize(sentence, &mut Scratch::default(), &mut tokens);
                        let mut seen = Vec::new();
                        for token in tokens {
                            if targets.contains(&token.id) && !seen.contains(&token.id) {
                                seen.push(token.id);
                                let span = sentence[token.start..token.end].to_string();
                                expected.get_mut(&token.id).unwrap().push((index, span));
                            }
                        }
                        index += 1;
                    }
                }
            }
            assert!(expected.values().filter(|v| !v.is_empty()).count() >= 4, "{expected:?}");
            for threads in [1, 2] {
                let options =
                    Options { max_per_token: 100, num_threads: threads, batch_bytes: 7, ..Options::default() };
                let (found, stats) = scan(&paths, &tokenizer, &targets, &options);
                assert_eq!(stats.sentences, index);
                for t in &targets {
                    let got: Vec<(u64, String)> = found[t]
                        .iter()
                        .map(|f| (f.sentence_index, f.sentence.chars().skip(f.start).take(f.end - f.start).collect()))
                        .collect();
                    assert_eq!(got, expected[t], "{}", tokenizer.id_to_token(*t).unwrap());
                }
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reports_bad_inputs() {
        let (dir, paths, tokenizer) = fixture("errors");
        let missing = vec![dir.join("missing.txt")];
        let error = find_contexts(&missing, &tokenizer, &[5], &Options::default(), &mut |_| Ok(())).unwrap_err();
        assert!(
            matches!(&error, Error::Io { path, source } if path == &missing[0]
            && source.kind() == std::io::ErrorKind::NotFound),
            "{error}"
        );
        assert!(error.to_string().contains("missing.txt"), "{error}");
        let error = find_contexts(&paths, &tokenizer, &[999], &Options::default(), &mut |_| Ok(())).unwrap_err();
        assert!(matches!(&error, Error::InvalidArgument(m) if m.contains("999")), "{error}");
        let error =
            find_contexts(&paths, &tokenizer, &[5], &Options::default(), &mut |_| Err("stop".into())).unwrap_err();
        assert!(matches!(&error, Error::Aborted(m) if m == "stop"), "{error}");
        let options = Options { max_context_chars: 0, ..Options::default() };
        let error = find_contexts(&paths, &tokenizer, &[5], &options, &mut |_| Ok(())).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)));
        // A truncated .gz: an Error::Gzip that names the file.
        let bytes = std::fs::read(&paths[1]).unwrap();
        let truncated = dir.join("truncated.txt.gz");
        std::fs::write(&truncated, &bytes[..bytes.len() - 12]).unwrap();
        let error =
            find_contexts(&[truncated.clone()], &tokenizer, &[5], &Options::default(), &mut |_| Ok(())).unwrap_err();
        assert!(matches!(&error, Error::Gzip { path, .. } if path == &truncated), "{error}");
        assert!(error.to_string().contains("truncated.txt.gz"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
