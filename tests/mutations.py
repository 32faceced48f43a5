"""Apply one source mutation at a time to a copy of the repository and run the tests that must catch it
(tests/README.md, "Loosened tests keep their power"). Not collected by pytest; run by hand:

    .venv/bin/python tests/mutations.py [WORD]     # WORD: only the mutations whose name contains it

Each line says a mutation, the pass (pinned float32, or the `precision` tests with bf16 forced) and
pytest's summary: every line must show failures (rc=1)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


ROOT = str(Path(__file__).resolve().parents[1])
MUTATIONS = [
    (
        "drop one sub-token from the average",
        "bioptimus_hf/vocabulary/embedding_init.py",
        "vector = states[i, [p + offset for p in positions]].mean(dim=0)",
        "vector = states[i, [p + offset for p in (positions[:-1] or positions)]].mean(dim=0)",
        [
            "tests/test_embedding_init.py::test_contextualized_rows_match_hand_computation",
            "tests/test_embedding_init.py::test_contextualized_from_corpus_with_bad_bytes_and_missing_tokens",
        ],
    ),
    (
        "crop starting at the span instead of centred on it",
        "bioptimus_hf/vocabulary/embedding_init.py",
        "first = min(max(positions[0] - (window - span) // 2, 0), n - window)",
        "first = min(max(positions[0] - 4, 0), n - window)",
        ["tests/test_embedding_init.py::test_long_sentence_cropped_to_model_length"],
    ),
    (
        "swap two outputs in the stream",
        "bioptimus_hf/ner/tagger.py",
        "                yield from self._tag_chunk(chunk)",
        "                tagged = self._tag_chunk(chunk)\n                tagged[:2] = tagged[:2][::-1]\n                yield from tagged",
        ["tests/test_ner_speed.py::test_streaming_matches_the_whole_list_reads_lazily_and_keeps_order"],
    ),
    (
        "a window's labels written to its neighbour's row",
        "bioptimus_hf/ner/tagger.py",
        "labels[row], probabilities[row] = label[i], best[i]",
        "labels[rows[(i + 1) % len(rows)]], probabilities[rows[(i + 1) % len(rows)]] = label[i], best[i]",
        [
            "tests/test_ner_speed.py::test_sorted_batches_across_texts_equal_one_text_at_a_time_in_float32",
            "tests/test_bf16_paths.py::test_tagger_logits_within_the_bound_and_decisions_with_margin_equal_float64",
        ],
    ),
    (
        "static gather: padding rows keep a real target",
        "bioptimus_hf/pretraining/masked_lm.py",
        "targets = flat_labels.index_select(0, index).masked_fill(positions < 0, IGNORE_INDEX)",
        "targets = flat_labels.index_select(0, index)",
        ["tests/test_masked_lm.py::test_static_masked_positions_give_the_unpadded_loss_and_gradients"],
    ),
    (
        "static positions truncated to the bucket",
        "bioptimus_hf/pretraining/static_shapes.py",
        "size = overflow_size(bucket, flat.numel(), labels.numel())",
        "flat, size = flat[:bucket], bucket",
        [
            "tests/test_static_shapes.py::test_positions_are_the_labelled_ones_in_order_padded_and_never_truncated",
            "tests/test_static_shapes.py::test_overflow_is_counted_logged_and_drops_nothing",
        ],
    ),
    (
        "batches not marked static (slow: compiles)",
        "bioptimus_hf/pretraining/collator.py",
        "            static_shapes.mark_static(moved)",
        "            pass",
        ["tests/test_static_shapes.py::test_run_pretraining_compiles_once_per_phase_with_the_eager_losses"],
    ),
    (
        "lexical warm-up: nothing frozen",
        "bioptimus_hf/pretraining/lexical_warmup.py",
        "            parameter.requires_grad_(False)",
        "            pass",
        [
            "tests/test_lexical_warmup.py::test_only_the_lexical_parameters_train_in_the_warmup_on_every_architecture",
            "tests/test_lexical_warmup.py::test_warmup_freezes_the_body_bit_for_bit_then_the_curriculum_trains_everything",
        ],
    ),
    (
        "lexical warm-up: not frozen again on resume",
        "bioptimus_hf/pretraining/lexical_warmup.py",
        "        if state.global_step < self.steps:\n            self._freeze",
        "        if state.global_step == 0:\n            self._freeze",
        ["tests/test_lexical_warmup.py::test_resume_inside_or_across_the_warmup_equals_the_unbroken_run"],
    ),
    (
        "lexical warm-up: the curriculum's schedule not shifted past it",
        "bioptimus_hf/pretraining/lexical_warmup.py",
        "            return in_curriculum(step - warmup_steps)",
        "            return in_curriculum(step)",
        [
            "tests/test_lexical_warmup.py::test_one_schedule_with_the_warmups_peak_then_the_curriculums",
            "tests/test_lexical_warmup.py::test_warmup_freezes_the_body_bit_for_bit_then_the_curriculum_trains_everything",
        ],
    ),
    (
        "lexical warm-up: the phases start at step 0",
        "bioptimus_hf/pretraining/phases.py",
        "        return phase_boundaries(self.step_counts, start=self.lexical_warmup_steps)",
        "        return phase_boundaries(self.step_counts)",
        [
            "tests/test_lexical_warmup.py::test_the_warmup_comes_out_of_the_budget_and_the_phases_share_the_rest",
            "tests/test_lexical_warmup.py::test_warmup_freezes_the_body_bit_for_bit_then_the_curriculum_trains_everything",
        ],
    ),
]


def main() -> int:
    escaped = 0
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    for name, path, old, new, tests in MUTATIONS:
        if wanted not in name:
            continue
        copy = Path(tempfile.mkdtemp(prefix="mutation_")) / "repo"
        shutil.copytree(
            ROOT,
            copy,
            ignore=shutil.ignore_patterns(
                ".venv", ".git", "target", ".carry", ".whl", "outputs", "__pycache__", ".cargo-debian"
            ),
        )
        shared = Path(ROOT).parent / "shared"
        if shared.is_dir():  # the corpus the fixtures read sits beside the checkout (tests/helpers/__init__.py)
            (copy.parent / "shared").symlink_to(shared)
        source = (copy / path).read_text()
        assert source.count(old) == 1, f"{name}: the code to mutate is no longer in {path}"
        (copy / path).write_text(source.replace(old, new))
        for label, extra in (("pinned float32", []), ("bf16 forced", ["-m", "precision"])):
            env = dict(os.environ, HF_HUB_OFFLINE="1", **({"BIOPTIMUS_FORCE_BF16": "1"} if extra else {}))
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *tests],
                cwd=copy,
                capture_output=True,
                text=True,
                env=env,
            )
            lines = run.stdout.strip().splitlines()
            print(f"{name} [{label}]: rc={run.returncode}: {lines[-1] if lines else run.stderr[-300:]}", flush=True)
            escaped += run.returncode == 0
        shutil.rmtree(copy.parent)
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
