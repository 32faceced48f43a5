#!/usr/bin/env bash
# The pipeline through an installed package, run from a folder off the repository, as a user meets it:
#   scripts/smoke_installed.sh VENV WORK
# VENV holds bioptimus-hf installed from its wheel (scripts/test_floor.sh makes one); WORK is a scratch folder
# holding tiny_bert/ (the tests' tiny random BERT) and corpus.txt. It checks that `bioptimus --help` and every
# `bioptimus <command> --help` answer; runs a four-phase curriculum from the packaged config `demo_minilm` (named
# by name, the tiny model and corpus given as flags), a NER run on NCBI-disease, tagging, and `bioptimus blurb`
# on its default NER config (the packaged `ner_blurb`) and GAD, two jobs side by side; and that a usage error and a
# bad input end in one line.
set -euo pipefail
VENV=$(cd "$1" && pwd)
WORK=$(cd "$2" && pwd)
DATA=$(cd "$(dirname "$0")/../../shared/data" && pwd)
BIN=$VENV/bin
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
cd "$WORK"
fail() { echo "smoke_installed.sh: $*" >&2; exit 1; }

"$BIN/bioptimus" --help > help.txt
grep -q "demo_minilm" help.txt || fail "bioptimus --help lists no packaged config"
for command in $("$BIN/python" -c "from bioptimus_hf.commands import COMMANDS; print(*COMMANDS)"); do
  "$BIN/bioptimus" "$command" --help > "help-$command.txt" || fail "bioptimus $command --help failed"
  head -n 1 "help-$command.txt" | grep -qx "usage: bioptimus $command \[config.yaml\] \[--flag value ...\]" \
    || fail "bioptimus $command --help: $(head -n 1 "help-$command.txt")"
done

# One line each: a typo'd flag (exit 2) and a model folder that does not exist (exit 1).
set +e
"$BIN/bioptimus" ner --model_name_or_path tiny_bert --num_train_epoch 1 2> typo.txt; typo=$?
"$BIN/bioptimus" tag --model_name_or_path no/such/model --text x 2> missing.txt; missing=$?
set -e
[ "$typo" = 2 ] && [ "$(cat typo.txt)" = "error: unknown flag --num_train_epoch; did you mean --num_train_epochs?" ] \
  || fail "a typo'd flag: status $typo, $(cat typo.txt)"
[ "$missing" = 1 ] && [ "$(wc -l < missing.txt)" = 1 ] && grep -q "neither a directory nor a Hub id" missing.txt \
  || fail "a missing model: status $missing, $(cat missing.txt)"

"$BIN/bioptimus" pretrain demo_minilm --model_name_or_path tiny_bert --train_file corpus.txt \
  --output_dir pretrain --max_steps 8 --per_device_train_batch_size 8 --max_seq_length 32 --max_eval_samples 16 \
  --init_strategy continued --report_to none --disable_tqdm true --save_steps 100
for release in v0.1 v0.2 v0.3 v0.4; do
  [ -f "pretrain/releases/$release/bioptimus_phase.json" ] || fail "the curriculum left no release $release"
done
"$BIN/bioptimus" ner --model_name_or_path pretrain/releases/v0.4 --data_dir "$DATA/ner/NCBI-disease-IOB" \
  --output_dir ner --seeds 1 --max_steps 4 --max_train_samples 64 --max_eval_samples 32 --max_test_samples 32 \
  --max_seq_length 32 --window_stride 8 --report_to none --save_strategy no --use_cpu true --disable_tqdm true
[ -f ner/all_results.json ] || fail "bioptimus ner left no all_results.json"
"$BIN/bioptimus" tag --model_name_or_path ner/seed_1 --text "Mutations in BRCA1 cause breast cancer." > tags.jsonl
mkdir -p blurb_ner blurb_sets && ln -sfn "$DATA/ner/NCBI-disease-IOB" blurb_ner/NCBI-disease-IOB
ln -sfn "$DATA/blurb/GAD" blurb_sets/GAD
# Two jobs (a NER set and GAD) side by side in spawned workers of the installed package (--jobs auto).
"$BIN/bioptimus" blurb --model_name_or_path pretrain/releases/v0.4 --ner_dir blurb_ner --blurb_dir blurb_sets \
  --output_dir blurb --seeds 1 --max_steps 2 --max_train_samples 32 --max_eval_samples 16 --max_test_samples 16 \
  --jobs 2
for dataset in NCBI-disease-IOB GAD; do
  [ -f "blurb/$dataset/seed_1/seed_results.json" ] || fail "bioptimus blurb left no seed result for $dataset"
done
[ -f blurb/blurb_results.json ] || fail "bioptimus blurb left no blurb_results.json"
echo "smoke_installed.sh: every --help, one-line errors, pretrain demo_minilm, ner, tag, blurb (ner_blurb) ran from $WORK"
