# Sourced by setup_env.sh: point cargo at Debian's packaged crates when crates.io is not
# reachable. Elsewhere (CARGO_USE_CRATES_IO=1) the same Cargo.toml builds against crates.io.
if [ "${CARGO_USE_CRATES_IO:-0}" != "1" ]; then
  DEB_CRATES="librust-pyo3-dev librust-pyo3+extension-module-dev librust-rayon-dev librust-aho-corasick-dev librust-memchr-dev librust-flate2-dev librust-unicode-normalization-dev"
  if [ ! -d /usr/share/cargo/registry/pyo3-0.17* ] 2>/dev/null && ! ls -d /usr/share/cargo/registry/pyo3-0* >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $DEB_CRATES >/dev/null
    fi
  fi
  if ls -d /usr/share/cargo/registry/pyo3-0* >/dev/null 2>&1; then
    export CARGO_HOME="$ROOT/.cargo-debian"
    mkdir -p "$CARGO_HOME"
    cat > "$CARGO_HOME/config.toml" <<'TOML'
[source.crates-io]
replace-with = "debian-packages"

[source.debian-packages]
directory = "/usr/share/cargo/registry"

[net]
offline = true
TOML
  fi
fi
