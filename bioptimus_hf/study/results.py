"""The study's results: ``results.json`` (everything measured, per row) and ``results.md`` (the paper's tables).

Rows are the base model and the arms; NER cells are test (and devel) F1 over the fine-tuning seeds, mean ± sample
std; differences between rows are paired by fine-tuning seed (docs/study.md says why); pre-training numbers come
from each arm's releases and ``train_results.json``. Both files are rewritten after every finished unit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..finetuning.results import aggregate_seed_results, paired_seed_difference
from ..releases.record import ReleaseInfo, find_releases
from ..utils.files import read_json, write_json_atomic, write_text_atomic
from ..utils.secrets import redact
from .done_marks import is_done
from .runner import StudyLayout, finished_ner_runs
from .study_config import BASE_ROW, ArmConfig, StudyArguments


RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
NOT_RUN = "–"
# What two studies must share for a difference between their rows, paired by fine-tuning seed, to compare like
# with like (--reference_results). The machine is not among them: float32 runs on two CPUs differ by rounding.
REFERENCE_KEYS = ("model_name_or_path", "token_budget", "ner_args")


# What results.json keeps of each release's record.
RELEASE_FIELDS = ("version", "global_step", "steps", "masking_unit", "masking_rate", "corruption")
RELEASE_FIELDS += ("realised_masked_fraction", "heldout_mlm_loss", "training_tokens")


def _pretraining_summary(run_dir: Path, finished: bool) -> dict[str, Any]:
    try:
        releases = [ReleaseInfo.load(p) for p in find_releases(run_dir)]
    except FileNotFoundError:
        releases = []
    summary = {"finished": finished, "releases": [{k: getattr(r, k) for k in RELEASE_FIELDS} for r in releases]}
    if (run_dir / "train_results.json").is_file():
        summary["train_metrics"] = read_json(run_dir / "train_results.json")
    return summary


def reference_rows(path: str | Path, wanted: list[str] | None, study: dict[str, Any]) -> dict[str, Any]:
    """The rows of an earlier study's ``results.json``, named ``row [its folder]`` and marked as references; refused
    (naming the file and the setting) unless it shares :data:`REFERENCE_KEYS` with ``study``."""
    path = Path(path)
    try:
        reference = read_json(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"--reference_results {path}: no such file") from None
    except ValueError as error:
        raise ValueError(f"--reference_results {path}: not JSON ({error})") from None
    if not (isinstance(reference, dict) and all(isinstance(reference.get(k), dict) for k in ("study", "rows"))):
        raise ValueError(f"--reference_results {path}: not a study's results.json (needs 'study' and 'rows')")
    theirs, rows = reference["study"], reference["rows"]
    for key in REFERENCE_KEYS:
        ours = json.loads(json.dumps(study[key]))  # as it would read back from a results.json
        if theirs.get(key) != ours:
            raise ValueError(
                f"--reference_results {path}: its {key} {theirs.get(key)!r} differs from this study's "
                f"{ours!r}; paired differences would compare unlike runs"
            )
    unknown = sorted(set(wanted or []) - set(rows))
    if unknown:
        raise ValueError(f"--reference_rows {unknown}: not rows of {path} (rows: {list(rows)})")
    label = path.parent.name or str(path)
    return {
        f"{name} [{label}]": {**row, "reference": {"results": str(path), "row": name}}
        for name, row in rows.items()
        if not wanted or name in wanted
    }


def _base_row(rows: dict[str, Any], reference: dict[str, Any] | None = None) -> str | None:
    """The row the 'Δ vs base' column pairs with: for a reference study's row (``reference``, its marker) that
    study's base; otherwise this study's base row, else a reference study's."""
    if reference is None and BASE_ROW in rows:
        return BASE_ROW
    bases = [name for name, row in rows.items() if (row.get("reference") or {}).get("row") == BASE_ROW]
    return next(
        (n for n in bases if reference is None or rows[n]["reference"]["results"] == reference["results"]), None
    )


def _study_vocabulary(args: StudyArguments, layout: StudyLayout) -> dict[str, Any]:
    """The new-vocabulary arms' vocabulary: replaced or extended, its size and added tokens once trained."""
    from ..vocabulary.tokenizer_training import COVERAGE_REPORT_NAME

    vocabulary: dict[str, Any] = {
        "mode": args.tokenizer_run_args.get("vocabulary_mode", "replace"),
        "vocab_size": args.tokenizer_vocab_size,
    }
    report_file = Path(args.tokenizer_name or layout.tokenizer) / COVERAGE_REPORT_NAME
    report = read_json(report_file) if report_file.is_file() else {}
    recorded_as = {"mode": "vocabulary_mode", "vocab_size": "new_vocab_size", "added_tokens": "added_tokens"}
    for key, recorded in recorded_as.items():
        if recorded in report:
            vocabulary[key] = report[recorded]
    return vocabulary


def _initialisation_text(row: dict[str, Any]) -> str:
    """The table's initialisation cell: the strategy, and the vocabulary when it extends the base's."""
    vocabulary = row.get("vocabulary") or {}
    if vocabulary.get("mode") != "extend":
        return row["init_strategy"]
    added = vocabulary.get("added_tokens")
    return f"{row['init_strategy']}, " + (f"base vocabulary + {added:,} tokens" if added else "extended")


def _ner_cells(layout: StudyLayout, name: str) -> dict[str, dict[str, Any]]:
    """A row's finished NER runs, aggregated over seeds per (target, dataset)."""
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in finished_ner_runs(layout, name):
        by_cell.setdefault((run["target"], run["dataset"]), []).append(run)
    ner: dict[str, dict[str, Any]] = {}
    for (target, dataset), runs in by_cell.items():
        runs.sort(key=lambda r: r["seed"])
        aggregated = aggregate_seed_results([r["result"] for r in runs])
        ner.setdefault(target, {})[dataset] = {**aggregated, "seconds": sum(r["seconds"] for r in runs)}
    return ner


def _arm_row(args: StudyArguments, layout: StudyLayout, arm: ArmConfig, vocabulary: dict[str, Any]) -> dict:
    row: dict[str, Any] = {"init_strategy": arm.init_strategy}
    if arm.init_strategy != "continued":
        row["vocabulary"] = vocabulary
    row["curriculum"] = arm.curriculum_text
    row["max_steps"] = arm.max_steps(args.token_budget)
    row["tokens"] = row["max_steps"] * arm.tokens_per_step()
    run_dir = layout.pretraining(arm.name)
    row["pretraining"] = _pretraining_summary(run_dir, is_done(layout.arm(arm.name))) if run_dir.is_dir() else None
    return row


def collect_results(args: StudyArguments) -> dict[str, Any]:
    """Everything the study has finished so far, as one JSON-able dict."""
    layout = StudyLayout(args.output_dir)
    vocabulary = _study_vocabulary(args, layout)
    rows: dict[str, Any] = {}
    # The base row is shown when asked for or when its results exist: a second process started with
    # --include_base false (so as not to evaluate it twice) must not drop the first process's base row.
    if args.include_base or finished_ner_runs(layout, BASE_ROW):
        rows[BASE_ROW] = {"init_strategy": "base (no further pre-training)"}
    rows.update({arm.name: _arm_row(args, layout, arm, vocabulary) for arm in args.arm_configs})
    for name, row in rows.items():
        row["ner"] = _ner_cells(layout, name)
    study = {
        "model_name_or_path": args.base_model_hub_id or Path(args.model_name_or_path).name,
        "token_budget": args.token_budget,
        "seed": args.seed,
        "ner_datasets": [Path(d).name for d in args.ner_data_dirs],
        "ner_seeds": list(args.ner_seeds),
        "ner_args": redact(args.ner_run_args),
        "evaluate_checkpoints": list(args.evaluate_checkpoints),
        "evaluate_every_steps": args.evaluate_every_steps,
        "arms": {a.name: {"init_key": a.init_key, "args": redact(a.args)} for a in args.arm_configs},
        "vocabulary": vocabulary,
    }
    if args.reference_results:  # first, so that every pair reads "this study's row − the earlier one"
        study["reference_results"] = str(args.reference_results)
        rows = {**reference_rows(args.reference_results, args.reference_rows, study), **rows}
    return {"study": study, "rows": rows, "paired": paired_differences(rows, study["ner_datasets"])}


def paired_differences(rows: dict[str, Any], datasets: list[str], target: str = "final") -> list[dict[str, Any]]:
    """Test F1 of every row minus every earlier row (the base first), seed by seed, per dataset (in order).

    Two rows of a reference study are paired again only with its base row (the report's "Δ vs base" column):
    their other differences are in that study's own report."""
    names = list(rows)
    pairs = []
    for i, earlier in enumerate(names):
        for later in names[i + 1 :]:
            if rows[later].get("reference") and (rows[earlier].get("reference") or {}).get("row") not in (
                None,
                BASE_ROW,
            ):
                continue
            for dataset in datasets:
                cell = rows[later]["ner"].get(target, {}).get(dataset)
                reference = rows[earlier]["ner"].get(target, {}).get(dataset)
                difference = paired_seed_difference(cell, reference) if cell and reference else None
                if difference:
                    pairs.append(
                        {"row": later, "reference": earlier, "target": target, "dataset": dataset, **difference}
                    )
    return pairs


def _paired_cell(results: dict[str, Any], row: str, reference: str, dataset: str) -> str:
    for pair in results.get("paired", []):
        if (pair["row"], pair["reference"], pair["dataset"]) == (row, reference, dataset):
            return f"{_plus_minus(pair)} (n={pair['num_seeds']})"
    return NOT_RUN


def _plus_minus(pair: dict[str, Any]) -> str:
    # One seed has no spread: say nothing rather than a misleading "± 0.00".
    spread = f" ± {100 * pair['std']:.2f}" if pair["num_seeds"] > 1 else ""
    return f"{100 * pair['mean']:+.2f}{spread}"


def _pm(cell: dict[str, Any] | None, key: str) -> str:
    if not cell or cell.get(key) is None:
        return NOT_RUN
    value, std = 100 * cell[key], 100 * cell.get(f"{key}_std", 0.0)
    return f"{value:.2f} ± {std:.2f} (n={cell['num_seeds']})"


def _num(value: Any, digits: int = 3) -> str:
    return NOT_RUN if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _header(cells: list[str]) -> list[str]:
    return [_row(cells), "|" + "---|" * len(cells)]


def _final_loss(row: dict[str, Any]) -> Any:
    releases = (row.get("pretraining") or {}).get("releases") or []
    return releases[-1]["heldout_mlm_loss"] if releases else None


def _ner_table(results: dict[str, Any]) -> list[str]:
    """Each row's final model: initialisation, curriculum, loss and NER F1 with its paired Δ against its base."""
    rows, datasets = results["rows"], results["study"]["ner_datasets"]
    lines = ["## NER of each arm's final model (test F1 %, mean ± std over seeds; paper Tables 2 and 7)", ""]
    header = ["row", "initialisation", "curriculum", "steps", "held-out MLM loss"]
    for dataset in datasets:
        header += [f"{dataset} test F1", f"{dataset} devel F1", "Δ test F1 vs base (paired)"]
    lines += _header(header)
    base = _base_row(rows)
    for name, row in rows.items():
        pre = row.get("pretraining")
        finished = name == base or row.get("reference") or (pre and pre["finished"])
        status = "" if finished else (" (training)" if pre else " (not run)")
        row_base = _base_row(rows, row.get("reference"))
        cells = [
            f"{name}{status}",
            _initialisation_text(row),
            row.get("curriculum", NOT_RUN),
            str(row.get("max_steps", 0)),
            _num(_final_loss(row)),
        ]
        for dataset in datasets:
            cell = row["ner"].get("final", {}).get(dataset)
            cells += [_pm(cell, "test_f1"), _pm(cell, "eval_f1")]
            cells.append(_paired_cell(results, name, row_base, dataset) if row_base else NOT_RUN)
        lines.append(_row(cells))
    return lines


def _arm_pairs_table(results: dict[str, Any]) -> list[str]:
    """The arms' paired differences with each other (those against a base are the NER table's column)."""
    rows, base = results["rows"], _base_row(results["rows"])
    # (a reference study's rows against its own base are the column above)
    arm_pairs = [
        p
        for p in results.get("paired", [])
        if base not in (p["row"], p["reference"])
        and not (rows[p["row"]].get("reference") and rows[p["reference"]].get("reference"))
    ]
    if not arm_pairs:
        return []
    lines = [
        "",
        "## Arms against each other (test F1 %, paired by fine-tuning seed: mean ± std of the differences)",
        "",
        "| difference | dataset | mean ± std | per seed |",
        "|---|---|---|---|",
    ]
    for pair in arm_pairs:
        per_seed = ", ".join(f"{100 * d:+.2f} (seed {s})" for s, d in zip(pair["seeds"], pair["differences"]))
        lines.append(f"| {pair['row']} − {pair['reference']} | {pair['dataset']} | {_plus_minus(pair)} | {per_seed} |")
    return lines


def _phase_table(rows: dict[str, Any], datasets: list[str]) -> list[str]:
    """Paper Table 5: every release of every arm, its masking, loss and NER F1."""
    lines = ["", "## Phase by phase (paper Table 5): releases of each arm", ""]
    lines += _header(
        ["arm", "release", "masking", "steps", "realised masked fraction", "held-out MLM loss (own masking)"]
        + [f"{d} test F1" for d in datasets]
    )
    for name, row in rows.items():
        for release in (row.get("pretraining") or {}).get("releases") or []:
            masking = f"{release['masking_unit']} {release['masking_rate']:.2f}"
            target = row["ner"].get(f"v{release['version']}", {})
            cells = [name, f"v{release['version']}", masking + ("" if release["corruption"] else ", all [MASK]")]
            cells += [str(release["global_step"]), _num(release["realised_masked_fraction"], 4)]
            cells += [_num(release["heldout_mlm_loss"])] + [_pm(target.get(d), "test_f1") for d in datasets]
            lines.append(_row(cells))
    return lines


def _checkpoint_table(rows: dict[str, Any], datasets: list[str]) -> list[str]:
    """Paper Figure 3: NER of the pre-training checkpoints evaluated along the way (none: no table)."""
    steps = sorted(
        (name, int(target.split("_")[1]), cells)
        for name, row in rows.items()
        for target, cells in row["ner"].items()
        if target.startswith("step_")
    )
    if not steps:
        return []
    lines = ["", "## NER per pre-training checkpoint (paper Figure 3)", ""]
    lines += _header(["arm", "step"] + [f"{d} test F1" for d in datasets])
    for name, step, cells in steps:
        lines.append(_row([name, str(step)] + [_pm(cells.get(d), "test_f1") for d in datasets]))
    return lines


# The representation table's columns: a measure of study/analysis.py and its heading.
MEASURES = (("mean_cosine", "mean cos"), ("partition_ratio", "I(W)"), ("separation", "rare↔frequent separation"))


def _analysis_tables(analysis: dict[str, Any] | None) -> list[str]:
    """Paper Figure 5's representation table, and the held-out loss on new and old tokens where measured."""
    if not analysis:
        return []
    lines = ["", "## Representations of rare and frequent tokens (paper Figure 5)", ""]
    lines += _header(
        ["row", "model"] + [f"{kind} {label}" for kind in ("input", "contextual") for _, label in MEASURES]
    )
    for row, targets in analysis.items():
        for target, measures in targets.items():
            values = [measures[kind][key] for kind in ("input", "contextual") for key, _ in MEASURES]
            lines.append(_row([row, target] + [f"{value:.3f}" for value in values]))
    lines += [
        "",
        "mean cos: mean pairwise cosine of the rare and frequent tokens' vectors (0 = isotropic); I(W): "
        "Mu & Viswanath's partition-function ratio (1 = isotropic); separation: distance between the rare and "
        "the frequent tokens' centroids over their RMS spread (rare/frequent: the 20% least/most frequent "
        "tokens seen in the corpus; contextual: last-layer states averaged over a corpus sample).",
    ]
    kinds = [(row, t, m.get("heldout_by_token_kind")) for row, ts in analysis.items() for t, m in ts.items()]
    kinds = [(row, target, split) for row, target, split in kinds if split]
    if not kinds:
        return lines
    lines += [
        "",
        "## Held-out MLM loss on new and old tokens (one masking for all: tokens 15 %, 80/10/10, "
        "seeded; bioptimus_hf/analysis/token_kind_loss.py)",
        "",
    ]
    lines += _header(["arm", "release"] + [f"loss on {k}-token targets (positions)" for k in ("new", "old")] + ["all"])
    for row, target, split in kinds:
        cells = [row, target] + [f"{_num(split[k]['loss'])} ({split[k]['positions']})" for k in ("new", "old")]
        lines.append(_row(cells + [_num(split["all"]["loss"])]))
    return lines


def _notes(study: dict[str, Any]) -> list[str]:
    """Where reference rows come from, and how to read the NER and loss columns."""
    lines = []
    if study.get("reference_results"):
        lines += [
            "",
            f"Rows named 'row [folder]' come from an earlier study, {study['reference_results']} (same base "
            "model, token budget and NER arguments; possibly another machine): they were not run again here.",
        ]
    return lines + [
        "",
        f"NER: {', '.join(study['ner_datasets']) or 'none'}; seeds {study['ner_seeds']}; bioptimus ner arguments "
        f"{study['ner_args']}. '{NOT_RUN}': not run (yet).",
        "Held-out MLM loss: per masked token of the row's own tokenization (its last release), so rows with "
        "the base vocabulary (continued) and rows with the new vocabulary are not directly comparable.",
        "",
    ]


def markdown_report(results: dict[str, Any], analysis: dict[str, Any] | None = None) -> str:
    """``results.md``: the title, then the NER, arm-pair, phase, checkpoint and analysis tables, then notes."""
    study, rows = results["study"], results["rows"]
    datasets = study["ner_datasets"]
    title = f"# Study: {study['model_name_or_path']}, {study['token_budget']:,} training tokens per arm, seed "
    lines = [title + str(study["seed"]), "", *_ner_table(results), *_arm_pairs_table(results)]
    lines += _phase_table(rows, datasets) + _checkpoint_table(rows, datasets) + _analysis_tables(analysis)
    return "\n".join(lines + _notes(study))


def write_results(args: StudyArguments, analysis: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rewrite results.json and results.md from what is finished (atomic: a reader never sees half a file)."""
    results = redact(collect_results(args))  # the settings as given, without a secret (hub_token: <redacted>)
    if analysis:
        results["analysis"] = analysis
    results_dir = Path(args.results_dir)
    write_json_atomic(results_dir / RESULTS_JSON, results)
    write_text_atomic(results_dir / RESULTS_MD, markdown_report(results, analysis))
    return results
