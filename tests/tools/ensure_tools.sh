#!/usr/bin/env bash
# Installs the external tools the service/collector/alert tests use, without changing the system:
#   - rotel (a native OpenTelemetry collector shipped as a binary in a PyPI wheel) into the venv;
#   - promtool (Debian's `prometheus` package), fetched with `apt-get download` and unpacked with
#     `dpkg -x` under .cache/debs (git-ignored).
# Idempotent: a tool already present is not fetched again. Usage: tests/tools/ensure_tools.sh [VENV_PYTHON]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
CACHE="$ROOT/.cache"
DEBS="$CACHE/debs"
ROTEL_VERSION="${ROTEL_VERSION:-0.0.1a15}"

if ! "$PY" -c "import rotel" >/dev/null 2>&1; then
    "$PY" -m pip install -q "rotel==$ROTEL_VERSION"
fi

fetch_deb() {  # fetch_deb PACKAGE BINARY: unpack PACKAGE into $DEBS/PACKAGE unless BINARY is there
    local pkg="$1" bin="$2" dir="$DEBS/$1"
    if [ -x "$dir/usr/bin/$bin" ]; then
        return 0
    fi
    mkdir -p "$dir" "$DEBS/download"
    if ! (cd "$DEBS/download" && apt-get download -q "$pkg" >/dev/null 2>&1); then
        # A fresh machine may have no package lists yet.
        apt-get update -qq >/dev/null 2>&1 || true
        (cd "$DEBS/download" && apt-get download -q "$pkg" >/dev/null)
    fi
    local deb
    deb="$(ls -t "$DEBS/download/${pkg}"_*.deb | head -n 1)"
    dpkg -x "$deb" "$dir"
    test -x "$dir/usr/bin/$bin"
}

fetch_deb prometheus promtool
echo "tools ready: rotel ($("$PY" -c 'import rotel, os; print(os.path.dirname(rotel.__file__))')), promtool ($DEBS/prometheus/usr/bin/promtool)"
