#!/usr/bin/env bash
# One-shot, idempotent environment set-up used by both Quickstart commands and by CI.
# Creates .venv/ in the repository, installs the CPU torch wheel, the package with its
# extras and, where cargo is present, builds the qik-find Rust extension from Debian's
# packaged crates (crates.io is not reachable on our machines).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=$ROOT/.venv/bin/python
"$VPY" -m pip install -q --upgrade pip
# The newest tested versions (constraints/latest.txt), torch first: its pinned CPU wheel, as an unpinned
# torch would pull several GB of CUDA packages.
"$VPY" -m pip install -q -c constraints/latest.txt torch

if command -v cargo >/dev/null 2>&1; then
  source scripts/cargo_env.sh
fi
"$VPY" -m pip install -q -c constraints/latest.txt -e ".[test,demo]"
"$VPY" -c "import bioptimus_hf; print('bioptimus_hf', bioptimus_hf.__version__, 'installed in', '$ROOT/.venv')"
