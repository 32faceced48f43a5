#!/usr/bin/env bash
# CI's second environment: the oldest supported versions (constraints/floor.txt). Creates .venv-floor/
# holding the floor torch first, as a cluster user's environment holds the torch its drivers support;
# installs this project from its wheel (scripts/build_wheel.sh) with the other floors pinned; checks that
# the install kept that torch and that qik-find runs its Rust backend; runs the pipeline through the
# installed package; then the floor test subset (tests/README.md). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
FLOOR=constraints/floor.txt
FLOOR_TORCH=$(sed -n 's/^torch==\([^ ]*\).*/\1/p' "$FLOOR")

# One test file or more per wing, chosen for what differs across versions of the dependencies
# (tests/README.md says which covers what).
FLOOR_TESTS=(
  tests/test_tokenizer_training.py tests/test_tokenizer_families.py tests/test_qikfind.py
  tests/test_embedding_init.py tests/test_corpus_reader.py
  tests/test_collator.py tests/test_phase_schedule.py tests/test_masked_lm.py tests/test_run_pretraining.py
  tests/test_release_record.py tests/test_model_card.py tests/test_hub.py
  tests/test_ner_data.py tests/test_ner_run.py
  tests/test_run_distillation.py tests/test_study.py tests/test_token_kind_loss.py
  tests/test_blurb.py tests/test_supported_versions.py
)
# Left out at the floor: torch.compile (needs torch 2.7.1, refused in one line below it), and the fake Hub
# answering ModelCard.validate, which posts to HF_ENDPOINT only from huggingface_hub 2.2 (to huggingface.co,
# unreachable offline, before).
FLOOR_DESELECT=(
  -m "not compile"
  --deselect tests/test_hub.py::test_cards_pass_modelcard_validate_through_the_hub_endpoint
)

rm -rf .venv-floor
"$PY" -m venv .venv-floor
FPY=$ROOT/.venv-floor/bin/python
"$FPY" -m pip install -q --upgrade pip
"$FPY" -m pip install -q "torch==$FLOOR_TORCH"

bash scripts/build_wheel.sh
wheel=$(ls dist/*.whl)
# torch's pin left out: the install is free to replace torch, and must not.
grep -v '^torch==' "$FLOOR" > .venv-floor/floor-without-torch.txt
"$FPY" -m pip install -q -c .venv-floor/floor-without-torch.txt "$wheel[test]"

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
WORK=$ROOT/.venv-floor/smoke
mkdir -p "$WORK"
head -n 600 ../shared/data/corpus/pubmed_sentences.txt > "$WORK/corpus.txt"
# Run from $WORK, off the repository, so that bioptimus_hf is the installed one, not the source tree.
(cd "$WORK" && "$FPY" - "$FLOOR_TORCH" "$ROOT/tests" <<'PY'
import sys
from importlib.metadata import version
from pathlib import Path

floor_torch, tests_dir = sys.argv[1:]
if version("torch") != floor_torch:
    sys.exit(f"test_floor.sh: installing the wheel replaced torch {floor_torch} with {version('torch')}")
import bioptimus_hf
from bioptimus_hf.vocabulary.qikfind import find_contexts

if not Path(bioptimus_hf.__file__).is_relative_to(sys.prefix):
    sys.exit(f"test_floor.sh: bioptimus_hf was imported from {bioptimus_hf.__file__}, not the installed wheel")
sys.path.insert(0, tests_dir)
from helpers.ner import build_tiny_bert  # the tests' tiny random BERT and its tokenizer

build_tiny_bert("tiny_bert")
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("tiny_bert")
targets = tokenizer.convert_tokens_to_ids(["protein", "cells"])
contexts, stats = find_contexts(["corpus.txt"], tokenizer, targets, backend="auto", return_stats=True, progress=False)
if stats.backend != "rust" or not all(contexts.values()):
    sys.exit(f"test_floor.sh: the installed wheel's qik-find ran the {stats.backend} backend")
print(f"test_floor.sh: torch {floor_torch} kept; bioptimus_hf from {Path(bioptimus_hf.__file__).parent}; qik-find: rust")
PY
)

# The pipeline through the installed `bioptimus` command on that tiny BERT: a four-phase curriculum, a NER
# run on NCBI-disease, tagging; from $WORK, off the repository, like the check above.
smoke_pipeline() {
  local bioptimus=$ROOT/.venv-floor/bin/bioptimus
  "$bioptimus" pretrain --model_name_or_path "$WORK/tiny_bert" --train_file "$WORK/corpus.txt" \
    --output_dir "$WORK/pretrain" --do_train --max_steps 8 --per_device_train_batch_size 8 --max_seq_length 32 \
    --max_eval_samples 16 --report_to none --disable_tqdm true --save_steps 100
  "$bioptimus" ner --model_name_or_path "$WORK/pretrain/releases/v0.4" \
    --data_dir "$ROOT/../shared/data/ner/NCBI-disease-IOB" --output_dir "$WORK/ner" --seeds 1 --max_steps 4 \
    --max_train_samples 64 --max_eval_samples 32 --max_test_samples 32 --max_seq_length 32 --window_stride 8 \
    --report_to none --save_strategy no --use_cpu true --disable_tqdm true
  "$bioptimus" tag --model_name_or_path "$WORK/ner/seed_1" --text "Mutations in BRCA1 cause breast cancer."
}
(cd "$WORK" && smoke_pipeline) > "$WORK/pipeline.log" 2>&1 || { tail -n 40 "$WORK/pipeline.log"; exit 1; }
for release in v0.1 v0.2 v0.3 v0.4; do
  [ -f "$WORK/pretrain/releases/$release/bioptimus_phase.json" ] \
    || { echo "test_floor.sh: the curriculum left no release $release" >&2; exit 1; }
done
[ -f "$WORK/ner/all_results.json" ] || { echo "test_floor.sh: bioptimus ner left no all_results.json" >&2; exit 1; }
tail -n 1 "$WORK/pipeline.log"

# The subset runs from the repository (tests import run_*.py beside them) on the floor versions.
"$FPY" -m pytest -q -p no:cacheprovider -n "${BIOPTIMUS_TEST_WORKERS:-2}" "${FLOOR_DESELECT[@]}" "${FLOOR_TESTS[@]}" "$@"
