//! qik-find CLI: sample contexts for target tokens and write them as JSON lines on stdout.
//! The tokenizer (DIR/tokenizer.json, or a BERT vocab.txt) must be of a family qik-find reproduces
//! (WordPiece, byte-level BPE): the CLI says which at start, or exits with the reason it cannot.
//!
//!   qik-find --tokenizer DIR --targets FILE [--max-per-token 20] [--seed 0] [--threads 0]
//!            [--max-context-chars 1000] CORPUS...
//!
//! FILE: one target per line, a token string of the vocabulary or a numeric id (`#id` forces the
//! id reading for tokens that look like numbers: a line `#12` is id 12). Output: one JSON object
//! per target, {"id", "token", "contexts": [{"sentence", "start", "end", "sentence_index"}]};
//! start/end are code point offsets. Progress and the final stats go to stderr.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::exit;
use std::time::Instant;

use qikfind::{find_contexts, Options, Tokenizer};
use serde_json::json;

fn usage(message: &str) -> ! {
    eprintln!("qik-find: {message}");
    eprintln!(
        "usage: qik-find --tokenizer DIR --targets FILE [--max-per-token N] [--seed N] [--threads N] \
         [--max-context-chars N] CORPUS..."
    );
    exit(2)
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> T {
    let value = value.unwrap_or_else(|| usage(&format!("{flag} needs a value")));
    value.parse().unwrap_or_else(|_| usage(&format!("{flag}: not a valid number: {value:?}")))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut tokenizer_dir: Option<PathBuf> = None;
    let mut targets_file: Option<PathBuf> = None;
    let mut options = Options::default();
    let mut corpus: Vec<PathBuf> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tokenizer" => tokenizer_dir = args.next().map(PathBuf::from),
            "--targets" => targets_file = args.next().map(PathBuf::from),
            "--max-per-token" => options.max_per_token = number(&arg, args.next()),
            "--seed" => options.seed = number(&arg, args.next()),
            "--threads" => options.num_threads = number(&arg, args.next()),
            "--max-context-chars" => options.max_context_chars = number(&arg, args.next()),
            "-h" | "--help" => usage("help"),
            flag if flag.starts_with("--") => usage(&format!("unknown option {flag}")),
            path => corpus.push(PathBuf::from(path)),
        }
    }
    let tokenizer_dir = tokenizer_dir.unwrap_or_else(|| usage("--tokenizer is required"));
    let targets_file = targets_file.unwrap_or_else(|| usage("--targets is required"));
    if corpus.is_empty() {
        usage("no corpus files given");
    }
    let tokenizer = Tokenizer::from_dir(&tokenizer_dir).unwrap_or_else(|e| {
        eprintln!("qik-find: {e}");
        exit(1)
    });
    let family = tokenizer.family();
    eprintln!("qik-find: tokenizer family {} ({})", family.name(), family.description());
    let text = std::fs::read_to_string(&targets_file).unwrap_or_else(|e| {
        eprintln!("qik-find: {}: {e}", targets_file.display());
        exit(1)
    });
    let mut targets = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let id = match (line.strip_prefix('#').and_then(|s| s.parse::<u32>().ok()), tokenizer.token_to_id(line)) {
            (Some(id), _) => Some(id),
            (None, Some(id)) => Some(id),
            (None, None) => line.parse::<u32>().ok(),
        };
        match id {
            Some(id) if tokenizer.id_to_token(id).is_some() => targets.push(id),
            _ => {
                eprintln!(
                    "qik-find: {}:{}: {line:?} is neither a token nor an id of the vocabulary",
                    targets_file.display(),
                    number + 1
                );
                exit(1)
            }
        }
    }

    let total: u64 = corpus.iter().map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)).sum();
    let started = Instant::now();
    let mut report = |done: u64| -> Result<(), String> {
        let seconds = started.elapsed().as_secs_f64().max(1e-9);
        eprint!(
            "\rqik-find: {:.1}/{:.1} MB ({:.1} MB/s)   ",
            done as f64 / 1e6,
            total as f64 / 1e6,
            done as f64 / 1e6 / seconds
        );
        Ok(())
    };
    let (found, stats) = find_contexts(&corpus, &tokenizer, &targets, &options, &mut report).unwrap_or_else(|e| {
        eprintln!("\nqik-find: {e}");
        exit(1)
    });
    let scan_seconds = started.elapsed().as_secs_f64();
    eprintln!();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut seen = std::collections::HashSet::new();
    for id in &targets {
        if !seen.insert(*id) {
            continue;
        }
        let contexts: Vec<_> = found[id]
            .iter()
            .map(
                |f| json!({"sentence": f.sentence, "start": f.start, "end": f.end, "sentence_index": f.sentence_index}),
            )
            .collect();
        let line = json!({"id": id, "token": tokenizer.id_to_token(*id), "contexts": contexts});
        writeln!(out, "{line}").expect("cannot write to stdout");
    }
    out.flush().expect("cannot write to stdout");
    let mut summary = serde_json::Map::new();
    for (key, value) in stats.as_pairs() {
        summary.insert(key.to_string(), json!(value));
    }
    summary.insert("scan_seconds".to_string(), json!(scan_seconds));
    summary.insert("seconds".to_string(), json!(started.elapsed().as_secs_f64()));
    eprintln!("qik-find: {}", serde_json::Value::Object(summary));
}
