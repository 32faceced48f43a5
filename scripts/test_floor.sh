#!/usr/bin/env bash
# CI's second environment: the oldest supported versions (constraints/floor.txt). Creates .venv-floor/
# holding the floor torch first, as a cluster user's environment holds the torch its drivers support;
# installs this project from its wheel (scripts/build_wheel.sh) with the other floors pinned; checks that
# the install kept that torch and that qik-find runs its Rust backend; runs the pipeline through the
# installed package (scripts/smoke_installed.sh); then the floor test subset (tests/README.md). Extra arguments go
# to pytest.
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

# The installed package as a user meets it, from $WORK, off the repository like the check above: every command's
# --help, one-line errors, a four-phase curriculum from the packaged config demo_minilm on that tiny BERT, a NER
# run on NCBI-disease, tagging, and bioptimus blurb on its default NER config (scripts/smoke_installed.sh).
bash scripts/smoke_installed.sh .venv-floor "$WORK" > "$WORK/pipeline.log" 2>&1 \
  || { tail -n 40 "$WORK/pipeline.log"; exit 1; }
tail -n 1 "$WORK/pipeline.log"

# The subset runs from the repository (tests import run_*.py beside them) on the floor versions.
"$FPY" -m pytest -q -p no:cacheprovider -n "${BIOPTIMUS_TEST_WORKERS:-2}" "${FLOOR_DESELECT[@]}" "${FLOOR_TESTS[@]}" "$@"
