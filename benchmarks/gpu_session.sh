#!/usr/bin/env bash
# One call on a lent GPU machine (the `device` tool; CI never runs this): set up from carried files, run
# the stages named, and leave the results under $OUT as one archive plus the log.
#
#   bash benchmarks/gpu_session.sh env tests throughput     # call 1: environment, test suite, tokens/s
#   bash benchmarks/gpu_session.sh env study                # call 2: configs/study_gpu.yaml, arms side by side
#   SESSION_SECONDS=290 bash benchmarks/gpu_session.sh seeds  # more NER seeds: base vs continued
#
# The machine is bare and offline, so the call carries (paths ignored by git, named in `carry`; built here by
# `bash benchmarks/gpu_carry.sh`):
#   .carry/site.tar.gz   Python packages the image lacks or has older than setup.cfg's floors (transformers 5.24
#                        without the model families we never load, tokenizers, huggingface_hub, datasets,
#                        evaluate, seqeval, dill, multiprocess)
#   .carry/data.tar.gz   ../shared/data (corpus and the NER sets), unpacked beside the checkout as here
#   .carry/minilm/       all-MiniLM-L6-v2's config and tokenizer
#   .carry/minilm_weights/  its weights rounded to float16 (the full float32 file does not fit the call's 64 MiB);
#                        widened back to float32 before use (docs/speed.md says so); only the study needs them
# Each stage has a deadline inside the call's 10 minutes, so whatever finished comes back.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_session_out}
mkdir -p "$OUT"
START=$(date +%s)
DEADLINE=$((START + ${SESSION_SECONDS:-560}))
log() { echo "[$(date +%T) +$(($(date +%s) - START))s] $*"; }
left() { echo $((DEADLINE - $(date +%s))); }

setup() {
  mkdir -p /tmp/site && tar xzf .carry/site.tar.gz -C /tmp/site
  export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
  export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 MPLBACKEND=Agg
  if [ -f .carry/data.tar.gz ] && [ ! -d ../shared/data/corpus ]; then
    mkdir -p ../shared && tar xzf .carry/data.tar.gz -C ../shared
  fi
  BASE=/tmp/minilm
  if [ -d .carry/minilm ] && [ ! -f $BASE/config.json ]; then
    mkdir -p $BASE && cp .carry/minilm/*.json .carry/minilm/vocab.txt $BASE/
  fi
  if [ -f .carry/minilm_weights/model_fp16.safetensors ] && [ ! -f $BASE/model.safetensors ]; then
    python3 - <<'EOF'
import torch
from safetensors.torch import load_file, save_file
weights = load_file(".carry/minilm_weights/model_fp16.safetensors")
save_file({k: v.float() if v.is_floating_point() else v for k, v in weights.items()}, "/tmp/minilm/model.safetensors",
          metadata={"format": "pt"})
EOF
  fi
}

stage_env() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 - <<'EOF'
import json, os, time, torch, transformers, datasets, tokenizers, accelerate, huggingface_hub, pyarrow
print({m.__name__: m.__version__ for m in (torch, transformers, datasets, tokenizers, accelerate, huggingface_hub, pyarrow)})
print("transformers from", transformers.__file__)
from bioptimus_hf.utils.hardware import describe_hardware, device_has_fast_bf16
print("hardware:", describe_hardware(), "fast bf16 on cuda:", device_has_fast_bf16("cuda"))
# The chip's bf16 and tf32 matrix rates, measured (random data, median of 10 after warm-up).
rates = {}
for name, dtype, tf32 in (("bf16", torch.bfloat16, False), ("tf32", torch.float32, True), ("float32", torch.float32, False)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    n = 8192
    a, b = torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); a @ b; end.record(); torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    rates[name] = 2 * n**3 / sorted(times)[5] / 1e12
torch.backends.cuda.matmul.allow_tf32 = False
print("measured matmul TFLOP/s:", {k: round(v, 1) for k, v in rates.items()})
import sys
sys.path.insert(0, "benchmarks")
import _results
print("wrote", _results.write_result("device", {"matmul_8192_tflops": {k: round(v, 1) for k, v in rates.items()}},
                                     detail={"device": torch.cuda.get_device_name(0), "matmul_8192_tflops": rates},
                                     command="bash benchmarks/gpu_session.sh env"))
EOF
}

stage_tests() {
  # The suite with a GPU visible: every Trainer that does not ask for the CPU runs on CUDA.
  # TESTS_SECONDS caps it (default 150 s); the whole log comes back as $OUT/tests.txt, its summary here.
  local cap=${TESTS_SECONDS:-150}
  timeout $(( $(left) < cap ? $(left) : cap )) python3 -m pytest -q -p no:cacheprovider -n 12 ${TESTS_ARGS:-tests} \
    > "$OUT/tests.txt" 2>&1
  tail -40 "$OUT/tests.txt"
}

throughput() {  # section, then benchmark flags
  local section=$1; shift
  local budget=$(left)
  [ "$budget" -lt 40 ] && { log "skip $section: ${budget}s left"; return; }
  log "throughput $section"
  timeout "$budget" python3 benchmarks/pretraining_throughput.py --model_dir /tmp/minilm --bert_base_from_config true \
    --batch_size 128 --block_size 128 --max_lines 25000 --warmup_steps 5 --timed_steps 40 \
    --section "$section" "$@"
}

stage_throughput() {
  # The issue's pairs first (fair pair: ours-bf16 vs plain-bf16), then host-sync-free logging and loader
  # workers, then torch.compile on top of the better settings.
  throughput four_arms --arms plain,ours,plain+bf16,ours+bf16 --rounds 2
  throughput no_host_sync --arms plain+bf16,ours+bf16 --rounds 2 --dataloader_num_workers 4 --logging_steps 45 \
    --logging_nan_inf_filter false
  throughput compile --arms plain+bf16+compile,ours+bf16+compile --rounds 1 --dataloader_num_workers 4 \
    --logging_steps 45 --logging_nan_inf_filter false --warmup_steps 10
}

stage_static_shapes() {
  # Issue 31: BERT-base in bf16 at batch 256 x 128, the baseline and both recipes compiled (ours+compile gathers
  # the labelled positions padded to the phase's static bucket), alternating, no per-step host syncs.
  throughput static_shapes_bf16 --arms plain+bf16,plain+bf16+compile,ours+bf16+compile --rounds 2 \
    --batch_size 256 --max_lines 75000 --warmup_steps 10 --timed_steps 40 --dataloader_num_workers 4 \
    --logging_steps 1000 --logging_nan_inf_filter false
}

stage_static_shapes_512() {
  # The same at batch 512 x 128 (one round): does a larger step raise the MFU?
  throughput static_shapes_bf16_batch512 --arms plain+bf16,ours+bf16+compile --rounds 1 \
    --batch_size 512 --max_lines 75732 --warmup_steps 8 --timed_steps 20 --dataloader_num_workers 4 \
    --logging_steps 1000 --logging_nan_inf_filter false
}

stage_study() {
  # STUDY_ARGS adds flags to every run_study.py call and STUDY_ARMS names the arm lanes, e.g. a larger budget
  # for two arms, into its own results (the 20M study's lanes took 108 s + 94 s of training + ~6 x 50 s of NER):
  #   STUDY_ARMS="continued contextualized" STUDY_ARGS="--token_budget 40000000 --output_dir outputs/study_gpu_40m
  #     --results_dir benchmarks/results/gpu-h100/study_gpu_40m"
  local config=configs/study_gpu.yaml args=(--model_name_or_path /tmp/minilm ${STUDY_ARGS:-})
  log "study: tokenizer and start models"
  timeout "$(left)" python3 run_study.py $config "${args[@]}" --prepare_only true > "$OUT/study_prepare.log" 2>&1
  log "study: lanes (base row, then one per arm)"
  local pids=()
  python3 run_study.py $config "${args[@]}" --only_arms base --skip_analysis true > /tmp/lane_base.log 2>&1 &
  pids+=($!)
  for arm in ${STUDY_ARMS:-continued averaged contextualized contextualized_one_phase}; do
    python3 run_study.py $config "${args[@]}" --only_arms $arm --include_base false --skip_analysis true \
      > "/tmp/lane_$arm.log" 2>&1 &
    pids+=($!)
  done
  # Stop the lanes at the deadline, keeping time for the report: what finished is kept (done marks).
  while [ "$(left)" -gt 45 ] && kill -0 "${pids[@]}" 2>/dev/null; do sleep 5; done
  kill "${pids[@]}" 2>/dev/null; wait
  log "study: report"
  local analysis=(--skip_analysis true)
  [ "$(left)" -gt 120 ] && analysis=()
  timeout "$(( $(left) + 20 ))" python3 run_study.py $config "${args[@]}" --report_only true "${analysis[@]}" \
    > /tmp/study_report.log 2>&1
  du -sh outputs/study_gpu 2>/dev/null
  (cd /tmp && tar czf "$OUT/study_logs.tar.gz" lane_*.log study_report.log)
}

stage_seeds() {
  # A second, independent continued run at the same budget, and more fine-tuning seeds (4-8) on NCBI-disease
  # for it and for the base: the base-vs-continued difference with more seeds than one lane's three.
  local config=configs/study_gpu.yaml
  local args=(--model_name_or_path /tmp/minilm --output_dir outputs/study_gpu_seeds
              --results_dir "$RESULTS/study_gpu_seeds" --ner_data_dirs ../shared/data/ner/NCBI-disease-IOB)
  local pids=()
  python3 run_study.py $config "${args[@]}" --only_arms continued --include_base false --skip_analysis true \
    --ner_seeds 4 > /tmp/lane_continued_4.log 2>&1 &
  pids+=($!)
  for seed in 4 5 6 7 8; do
    python3 run_study.py $config "${args[@]}" --only_arms base --skip_analysis true --ner_seeds $seed \
      > /tmp/lane_base_$seed.log 2>&1 &
    pids+=($!)
  done
  while [ ! -f outputs/study_gpu_seeds/arms/continued/study_done.json ] && [ "$(left)" -gt 60 ]; do sleep 3; done
  log "seeds: continued trained"
  for seed in 5 6 7 8; do
    python3 run_study.py $config "${args[@]}" --only_arms continued --include_base false --skip_analysis true \
      --ner_seeds $seed > /tmp/lane_continued_$seed.log 2>&1 &
    pids+=($!)
  done
  while [ "$(left)" -gt 25 ] && kill -0 "${pids[@]}" 2>/dev/null; do sleep 3; done
  kill "${pids[@]}" 2>/dev/null; wait
  log "seeds: report"
  timeout 40 python3 run_study.py $config "${args[@]}" --report_only true --skip_analysis true --ner_seeds 4 5 6 7 8 \
    > /tmp/study_report.log 2>&1
  (cd /tmp && tar czf "$OUT/seeds_logs.tar.gz" lane_*.log study_report.log)
}

setup
# This machine's results folder (benchmarks/_machine.py's kind, e.g. gpu-h100): the writer files there by itself.
RESULTS=benchmarks/results/$(python3 -c 'import sys; sys.path.insert(0, "benchmarks"); import _machine
print(_machine.machine_kind(_machine.describe_machine()))')
log "setup done; results in $RESULTS"
for stage in "$@"; do
  log "stage $stage"
  "stage_$stage" 2>&1 | tee -a "$OUT/session.log"
done
log "archiving"
tar czf "$OUT/results.tar.gz" "$RESULTS"
ls -la "$OUT"
