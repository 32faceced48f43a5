# Sourced (with ROOT set to the repository root) by setup_env.sh and test.sh: point cargo at Debian's
# packaged crates when crates.io is not reachable, installing them with apt when root.
# Elsewhere (CARGO_USE_CRATES_IO=1) the same rust/Cargo.toml builds against crates.io.
# Sets QIKFIND_CARGO_READY=1 when cargo has a crate source (Debian's, or crates.io when asked for).
QIKFIND_CARGO_READY=0
if [ "${CARGO_USE_CRATES_IO:-0}" = "1" ]; then
  QIKFIND_CARGO_READY=1
else
  QIKFIND_DEB_CRATES="librust-pyo3-dev librust-pyo3+extension-module-dev librust-rayon-dev \
librust-aho-corasick-dev librust-memchr-dev librust-flate2-dev librust-unicode-categories-dev \
librust-serde-json-dev"
  qikfind_crates_present() {
    local crate
    for crate in pyo3-0.17 rayon-1 aho-corasick-0.7 memchr-2 flate2-1 unicode_categories-0.1 serde_json-1; do
      ls -d /usr/share/cargo/registry/"$crate"* >/dev/null 2>&1 || return 1
    done
  }
  if ! qikfind_crates_present && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "cargo_env.sh: installing Debian's packaged Rust crates for qik-find" >&2
    apt-get update -qq >/dev/null || true
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $QIKFIND_DEB_CRATES >/dev/null \
      || echo "cargo_env.sh: apt-get install failed; the Rust extension may not build" >&2
  fi
  if qikfind_crates_present; then
    export CARGO_HOME="$ROOT/.cargo-debian"
    mkdir -p "$CARGO_HOME"
    # cargo looks for binaries (cargo, rustc) through PATH, not CARGO_HOME, so a rustup install keeps working.
    cat > "$CARGO_HOME/config.toml" <<'TOML'
[source.crates-io]
replace-with = "debian-packages"

[source.debian-packages]
directory = "/usr/share/cargo/registry"

[net]
offline = true
TOML
    QIKFIND_CARGO_READY=1
  else
    echo "cargo_env.sh: Debian's Rust crates are not available; cargo will try crates.io" >&2
  fi
fi
export QIKFIND_CARGO_READY
