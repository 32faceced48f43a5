#!/usr/bin/env bash
# The whole BLURB table of all-MiniLM-L6-v2 on one lent GPU, its fine-tunes side by side (`bioptimus blurb --jobs
# auto`), every dataset at its recipe: one call of the `device` tool, within its 10 minutes. Writes
# benchmarks/results/<kind>/blurb_table_all-MiniLM-L6-v2.json (wall time, plan, table, seeds finished, each job's
# steps/s, each GPU's utilisation sampled by nvidia-smi: benchmarks/blurb_concurrency.py --mode table) and leaves
# it, the log, the utilisation samples and the run's results.md files under $OUT.
#
#   bash benchmarks/gpu_carry.sh && bash benchmarks/blurb_gpu.sh carry   # here: build .carry/blurb/
#   device run, carry [".carry/blurb"], command: bash benchmarks/blurb_gpu.sh
#   DRY_RUN=1 bash benchmarks/blurb_gpu.sh     # anywhere: the jobs and an H100's plan, nothing trains
#   SEARCH=1 bash benchmarks/blurb_gpu.sh      # a second call: the paper's search on dev, BIOSSES and PubMedQA
#
# The machine is bare and offline, and a call carries 64 MiB with the working tree (about 10 MiB): `carry`
# recompresses what benchmarks/gpu_carry.sh builds (newer transformers & co., MiniLM's config, tokenizer and weights
# rounded to float16) and ../shared/data/blurb + ../shared/data/ner with xz into .carry/blurb/ (about 47 MiB; with
# gzip they do not fit). The weights are widened back to float32 before use, as gpu_session.sh does. Only MiniLM:
# BERT-base's weights (440 MB) cannot be carried. Settings: MODEL, BLURB_DIR, NER_DIR, SEEDS (default: the
# command's), DATASETS, OUTPUT, DEADLINE_S (default 480: the table stops there, whatever finished is filed).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/blurb_gpu_out}
MODEL=${MODEL:-/tmp/minilm}
BLURB_DIR=${BLURB_DIR:-../shared/data/blurb}
NER_DIR=${NER_DIR:-../shared/data/ner}
PY=${PY:-python3}
seeds=()
[ -n "${SEEDS:-}" ] && seeds=(--seeds $SEEDS)
subset=()  # DATASETS="GAD HoC": only those; OUTPUT: the results file's name (default blurb_table_<model>)
[ -n "${DATASETS:-}" ] && subset+=(--datasets $DATASETS)
[ -n "${OUTPUT:-}" ] && subset+=(--output "$OUTPUT")
if [ -n "${SEARCH:-}" ]; then  # --search true on the two sets the recipe fails small models on
  subset+=(--search true)
  [ -n "${DATASETS:-}" ] || subset+=(--datasets BIOSSES PubMedQA)
  [ -n "${OUTPUT:-}" ] || subset+=(--output blurb_search_all-MiniLM-L6-v2)
fi
[ -n "${BATCHED_SEEDS:-}" ] && subset+=(--batched_seeds "$BATCHED_SEEDS")  # default: bioptimus blurb's (on a GPU: on)

if [ "${1:-}" = carry ]; then
  set -e
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")" .carry/blurb
  grep -qx '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >> "$exclude"
  zcat .carry/site.tar.gz | xz -9 > .carry/blurb/site.tar.xz
  tar cJf .carry/blurb/minilm.tar.xz -C .carry minilm minilm_weights
  (cd .. && tar cJf "$OLDPWD/.carry/blurb/data.tar.xz" shared/data/blurb shared/data/ner --transform 's,^shared/,,')
  du -sh .carry/blurb/*
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  echo "working tree + .carry/blurb: $(( (tree + $(du -sb .carry/blurb | cut -f1)) / 1048576 )) MiB (limit 64)"
  exit 0
fi

if [ -n "${DRY_RUN:-}" ]; then
  exec $PY benchmarks/blurb_concurrency.py --mode table --dry_run --assume_gpu 79,80 --assume_cores 16 \
    --model_name_or_path "$MODEL" --blurb_dir "$BLURB_DIR" --ner_dir "$NER_DIR" "${seeds[@]}" "${subset[@]}"
fi

mkdir -p "$OUT" /tmp/site /tmp/carry
unxz() {  # Python's lzma: no xz binary needed on the machine
  $PY -c 'import sys, tarfile
safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2], **safe)' "$1" "$2"
}
unxz .carry/blurb/site.tar.xz /tmp/site
unxz .carry/blurb/minilm.tar.xz /tmp/carry
[ -d ../shared/data/blurb ] || { mkdir -p ../shared && unxz .carry/blurb/data.tar.xz ../shared; }
export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 MPLBACKEND=Agg
if [ ! -f "$MODEL/model.safetensors" ]; then
  mkdir -p "$MODEL" && cp /tmp/carry/minilm/*.json /tmp/carry/minilm/vocab.txt "$MODEL/"
  $PY - "$MODEL" <<'EOF'
import sys
from safetensors.torch import load_file, save_file
weights = load_file("/tmp/carry/minilm_weights/model_fp16.safetensors")
save_file({k: v.float() if v.is_floating_point() else v for k, v in weights.items()}, f"{sys.argv[1]}/model.safetensors",
          metadata={"format": "pt"})
EOF
fi
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
$PY benchmarks/blurb_concurrency.py --mode table --model_name_or_path "$MODEL" --model_name all-MiniLM-L6-v2 \
  --blurb_dir "$BLURB_DIR" --ner_dir "$NER_DIR" --deadline_s "${DEADLINE_S:-480}" --work_dir /tmp/blurb_gpu \
  "${seeds[@]}" "${subset[@]}" 2>&1 | tee "$OUT/blurb_gpu.log"
cp benchmarks/results/*/blurb_table_*.json "$OUT/" 2>/dev/null
cp /tmp/blurb_gpu/gpu_utilisation.csv "$OUT/" 2>/dev/null
(cd /tmp/blurb_gpu && tar czf "$OUT/blurb_gpu_runs.tar.gz" table.log table/blurb_results.* table/*/results.md \
  table/*/seed_*/seed_results.json table/logs 2>/dev/null)
ls -la "$OUT"
