#!/usr/bin/env bash
# Quickstart command (2): set up everything, then run the Rust and Python test suites.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
if command -v cargo >/dev/null 2>&1 && [ -f rust/Cargo.toml ]; then
  ROOT=$PWD; source scripts/cargo_env.sh
  if [ "$QIKFIND_CARGO_READY" = 1 ]; then
    (cd rust && cargo test --release --offline 2>&1 | tail -n 25)
    # The CLI, for tests/test_qikfind.py::test_cli_matches_python_backend.
    (cd rust && cargo build --release --offline --bin qik-find 2>&1 | tail -n 3)
  else
    echo "test.sh: no Rust crates available (see docs/qikfind.md); skipping cargo test" >&2
  fi
fi
# The optional FOCUS strategy (--init_strategy focus) is tested where its published implementation
# installs (deepfocus builds fasttext from source); elsewhere its test skips and the rest still runs.
.venv/bin/python -m pip install -q -e ".[focus]" >/dev/null 2>&1 \
  || echo "test.sh: the [focus] extra (deepfocus) did not install; its test will be skipped" >&2
# Lint and format as the Hugging Face projects do (pyproject.toml's [tool.ruff]); a violation fails the run.
.venv/bin/ruff check --quiet . && .venv/bin/ruff format --check --quiet . \
  || { echo "test.sh: ruff found the above (fix: .venv/bin/ruff check --fix . && .venv/bin/ruff format .)" >&2; exit 1; }
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# Pass 1 in parallel (pytest-xdist): most of the suite waits on subprocess start-up (torchrun, the run_*.py
# scripts), so two workers halve its time even on two cores; conftest.py gives each worker its share of
# the cores. BIOPTIMUS_TEST_WORKERS=0 runs it in one process.
.venv/bin/python -m pytest -q -p no:cacheprovider -n "${BIOPTIMUS_TEST_WORKERS:-2}" "$@"
# Both branches of `auto` precision on every machine (tests/README.md): the tests marked `precision` ran
# above as this machine resolves `auto`; again now with its bf16 branch forced (emulated where not native),
# also where the caller set BIOPTIMUS_DISABLE_BF16 (the two switches together are refused).
# A marker expression among the extra arguments (-m EXPR) narrows this pass too: "precision and (EXPR)".
marker=precision; rest=()
while [ $# -gt 0 ]; do
  if [ "$1" = "-m" ] && [ $# -gt 1 ]; then marker="precision and ($2)"; shift 2; else rest+=("$1"); shift; fi
done
status=0
env -u BIOPTIMUS_DISABLE_BF16 BIOPTIMUS_FORCE_BF16=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m "$marker" \
  ${rest[@]+"${rest[@]}"} || status=$?
[ "$status" = 0 ] || [ "$status" = 5 ] || exit "$status"  # 5: the arguments selected no precision test
