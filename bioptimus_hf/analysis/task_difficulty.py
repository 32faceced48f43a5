"""How hard each curriculum phase's masked-LM task is for a model (``bioptimus task-difficulty``, paper Figure 4):
its MLM loss and perplexity on a corpus sample masked the way each phase masks. The sample is packed into blocks as
pre-training packs them, and every phase masks the *same* blocks with the curriculum's collator from the same seed:
the phases differ only in their masking (those with the same unit and rate select the very same tokens).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch
from tqdm.auto import tqdm

from ..pretraining.collator import CurriculumDataCollator
from ..pretraining.phases import Curriculum, CurriculumPhase
from ..pretraining.tokenization import group_texts, tokenize_with_word_ids
from ..utils.corpus_reader import check_corpus_files, iter_text_lines
from ..utils.model_reference import check_model_reference
from .task_difficulty_config import TaskDifficultyArguments


def corpus_blocks(corpus_files: Sequence[str], tokenizer, block_size: int, max_blocks: int) -> list[dict[str, Any]]:
    """The first ``max_blocks`` packed blocks of the corpus (features the curriculum collator takes)."""
    blocks: list[dict[str, Any]] = []
    texts: list[str] = []

    def pack():
        encoded = tokenize_with_word_ids({"text": texts}, tokenizer, line_by_line=False)
        grouped = group_texts(encoded, block_size)
        blocks.extend({k: grouped[k][i] for k in grouped} for i in range(len(grouped["input_ids"])))
        texts.clear()

    for line in iter_text_lines(corpus_files):
        texts.append(line)
        if len(texts) == 256:
            pack()
            if len(blocks) >= max_blocks:
                break
    if texts and len(blocks) < max_blocks:
        pack()
    if not blocks:
        raise ValueError(f"{list(corpus_files)}: too little text for one block of {block_size} tokens")
    return blocks[:max_blocks]


@torch.no_grad()
def phase_losses(
    model,
    tokenizer,
    blocks: Sequence[dict[str, Any]],
    phases: Sequence[CurriculumPhase],
    batch_size: int = 16,
    seed: int = 0,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Per phase: mean masked-token loss, perplexity, masked tokens and the realised masked fraction."""
    model.eval()
    rows = []
    for index, phase in enumerate(phases):
        token_losses, maskable = [], 0
        starts = range(0, len(blocks), batch_size)
        for number, start in enumerate(tqdm(starts, desc=f"phase v{phase.version}", disable=not progress)):
            # A fresh stream per batch, the same for every phase: phases with the same unit and rate select
            # the same tokens, whatever random draws the previous batches' corruption consumed. (The keyed
            # stream of training puts the phase in each batch's key, which would make them differ.)
            collator = CurriculumDataCollator(
                tokenizer, phases=phases, seed=seed + number, masking_stream="sequential"
            )
            collator.set_phase(index)
            padded = collator(list(blocks[start : start + batch_size]))
            batch = collator.mask(padded, count=False)
            labels = batch["labels"]
            maskable += int(padded["maskable"].sum())
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            selected = labels != -100
            token_losses.append(
                torch.nn.functional.cross_entropy(
                    logits[selected].float(), labels[selected], reduction="none"
                ).double()
            )
        losses = torch.cat(token_losses)
        masked, loss = losses.numel(), float(losses.mean())
        # Standard error of the mean over masked tokens (treated as independent): how far apart two phases'
        # losses must be to tell them apart on this sample.
        standard_error = float(losses.std()) / math.sqrt(masked) if masked > 1 else 0.0
        rows.append(
            {
                "version": phase.version,
                "masking_unit": phase.masking_unit,
                "masking_rate": phase.masking_rate,
                "corruption": phase.corruption,
                "mlm_loss": loss,
                "mlm_loss_se": standard_error,
                "perplexity": math.exp(min(loss, 50.0)),
                "masked_tokens": masked,
                "realised_masked_fraction": masked / maskable,
            }
        )
    return rows


def difficulty_table(model_name: str, rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        f"| {model_name}: phase | masking | MLM loss ± SE | perplexity | masked tokens | realised fraction |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        masking = f"{row['masking_unit']} {row['masking_rate']:.2f}{'' if row['corruption'] else ', all [MASK]'}"
        lines.append(
            f"| v{row['version']} | {masking} | {row['mlm_loss']:.4f} ± {row['mlm_loss_se']:.4f} | "
            f"{row['perplexity']:.2f} | {row['masked_tokens']} | {row['realised_masked_fraction']:.4f} |"
        )
    return "\n".join(lines)


def plot_difficulty(results: Sequence[dict[str, Any]], path: str) -> str:
    """One line per model: its MLM loss under each phase's masking (the paper's Figure 4), as a PNG. ``results`` are
    per-model dicts with ``label`` and ``phases`` (``phase_losses`` rows)."""
    from ..utils.plots import pyplot

    plt = pyplot()
    phases = results[0]["phases"]
    ticks = [
        f"v{p['version']}\n{p['masking_unit']} {p['masking_rate']:.2f}"
        f"{'' if p['corruption'] else chr(10) + 'all [MASK]'}"
        for p in phases
    ]
    figure, axis = plt.subplots(figsize=(1.6 * len(phases) + 5.0, 4.0))
    for result in results:
        losses, errors = [p["mlm_loss"] for p in result["phases"]], [p["mlm_loss_se"] for p in result["phases"]]
        axis.errorbar(range(len(losses)), losses, yerr=errors, marker="o", capsize=3, label=result["label"])
    axis.set_xticks(range(len(phases)), ticks)
    axis.set_ylabel("MLM loss per masked token")
    axis.set_title("Task difficulty: each phase's masking on the same blocks")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: lines cross anywhere
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


# The first bytes of each corpus file read to check it before a model loads (an empty or non-text file is refused).
CORPUS_CHECK_BYTES = 1 << 20


def measure_task_difficulty(args: TaskDifficultyArguments, curriculum: Curriculum) -> dict:
    """Each model's MLM loss under each phase of ``curriculum`` on the same corpus (a markdown table per model
    printed); writes ``args.output_file`` (JSON) and ``args.output_plot`` (PNG) when given; returns the results."""
    from transformers import AutoModelForMaskedLM

    from ..utils.files import write_json_atomic
    from ..utils.tokenizer_loader import load_fast_tokenizer

    # Cheap checks first: the corpus and every model's name, before any model loads.
    check_corpus_files(args.corpus_files, max_check_bytes=CORPUS_CHECK_BYTES)
    named = [split_label(entry, args.model_name_or_path) for entry in args.model_name_or_path]
    for _, name in named:
        check_model_reference(name, "model_name_or_path")
    models = []
    for label, name in named:
        tokenizer = load_fast_tokenizer(name)
        # Each model packs the corpus with its own tokenizer: the same text, its own blocks.
        blocks = corpus_blocks(args.corpus_files, tokenizer, args.max_seq_length, args.max_blocks)
        model = AutoModelForMaskedLM.from_pretrained(name)
        rows = phase_losses(model, tokenizer, blocks, curriculum.phases, args.batch_size, args.seed)
        models.append({"model": name, "label": label, "blocks": len(blocks), "phases": rows})
        print(difficulty_table(label, rows))
        del model
    result = dict(corpus_files=list(args.corpus_files), max_seq_length=args.max_seq_length, seed=args.seed)
    result["models"] = models
    if args.output_file:
        write_json_atomic(args.output_file, result)
    if args.output_plot:
        plot_difficulty(models, args.output_plot)
    return result


def split_label(entry: str, entries: list[str]) -> tuple[str, str]:
    """``LABEL=PATH`` -> (LABEL, PATH); a bare path is labelled by the shortest tail that tells it from the
    other bare paths (``a/releases/v0.4`` and ``b/releases/v0.4`` -> ``a/releases/v0.4``, ``b/...``)."""
    if "=" in entry:
        return tuple(entry.split("=", 1))
    paths = [e.rstrip("/").split("/") for e in entries if "=" not in e]
    parts = entry.rstrip("/").split("/")
    for depth in range(1, len(parts) + 1):
        if len({"/".join(p[-depth:]) for p in paths}) == len(paths):
            return "/".join(parts[-depth:]), entry
    return entry, entry


def run_task_difficulty(args: TaskDifficultyArguments, curriculum_args: Any) -> dict:
    """``bioptimus task-difficulty``: :func:`measure_task_difficulty` under the curriculum its flags describe."""
    from ..pretraining.bioptimus_config import build_curriculum

    return measure_task_difficulty(args, build_curriculum(curriculum_args))
