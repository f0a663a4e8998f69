#!/usr/bin/env bash
# Installs the external tools the service/collector/alert tests use, without changing the system:
#   - rotel (a native OpenTelemetry collector shipped as a binary in a Python wheel) into the venv;
#   - promtool of the Prometheus 3 release deploy/ pins (Debian's `promtool` package, from sid: the
#     stable releases still ship Prometheus 2), fetched with `apt-get download` through a private apt
#     state under .cache/apt-sid (the machine's sources and lists are not touched) and unpacked with
#     `dpkg -x` under .cache/debs (git-ignored);
#   with --e2e also:
#   - VictoriaMetrics (+ vmalert) and Alertmanager from Debian trixie, fetched the same way through
#     .cache/apt-trixie;
#   - Arize Phoenix in its own venv, .cache/phoenix-venv;
#   - Debian's chromium (the HTML report test opens the report in it), installed with the machine's
#     own apt sources when it is missing: the one system package, since a browser needs its libraries.
# No package host is written here: Python packages come from pip's configured sources (pip.conf,
# PIP_INDEX_URL, ...), and the Debian suites from the archive the machine's own apt sources name
# for its release (read with `apt-get --print-uris update`, nothing written), or $DEBIAN_MIRROR.
# Idempotent: a tool already present is not fetched again.
# Usage: tests/tools/ensure_tools.sh [--e2e] [VENV_PYTHON]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
E2E=0
if [ "${1:-}" = "--e2e" ]; then E2E=1; shift; fi
PY="${1:-$ROOT/.venv/bin/python}"
CACHE="$ROOT/.cache"
DEBS="$CACHE/debs"
ROTEL_VERSION="${ROTEL_VERSION:-0.0.1a15}"
PHOENIX_VERSION="${PHOENIX_VERSION:-20.26.1}"

if ! "$PY" -c "import rotel" >/dev/null 2>&1; then
    "$PY" -m pip install -q "rotel==$ROTEL_VERSION"
fi

debian_mirror() {  # the Debian archive the machine's apt sources use for its own release
    if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "${DEBIAN_MIRROR%/}"; return 0; fi
    local id="" codename="" uri=""
    if [ -r /etc/os-release ]; then
        id="$(. /etc/os-release; echo "${ID:-}")"
        codename="$(. /etc/os-release; echo "${VERSION_CODENAME:-}")"
    fi
    if [ "$id" = debian ] && [ -n "$codename" ]; then
        # apt prints one line per index it would fetch: 'URI/dists/SUITE/InRelease' FILE SIZE ...
        uri="$(apt-get --print-uris update 2>/dev/null | sed -n "s|^'\(.*\)/dists/$codename/InRelease'.*|\1|p" | head -n 1)" || true
    fi
    if [ -z "$uri" ]; then
        echo "ensure_tools.sh: no Debian archive for this machine's release in its apt sources; set DEBIAN_MIRROR" >&2
        return 1
    fi
    echo "$uri"
}

unpack() {  # unpack PACKAGE: the newest downloaded .deb of PACKAGE into $DEBS/PACKAGE
    local pkg="$1" deb
    deb="$(ls -t "$DEBS"/download*/"${pkg}"_*.deb | head -n 1)"
    mkdir -p "$DEBS/$pkg"
    dpkg -x "$deb" "$DEBS/$pkg"
}

fetch_suite_deb() {  # fetch_suite_deb SUITE PACKAGE BINARY: from Debian SUITE, private apt state
    local suite="$1" pkg="$2" bin="$3" apt="$CACHE/apt-$1"
    [ -x "$DEBS/$pkg/usr/bin/$bin" ] && return 0
    local mirror
    mirror="$(debian_mirror)"
    mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/etc" "$DEBS/download-$suite"
    cat > "$apt/etc/$suite.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    local opts=(-o "Dir::Etc::sourcelist=/dev/null" -o "Dir::Etc::sourceparts=$apt/etc" -o "Dir::State::Lists=$apt/lists"
                -o "Dir::Cache=$apt" -o "Dir::State::status=/var/lib/dpkg/status" -o "APT::Sandbox::User=root")
    if [ ! -e "$apt/lists/.updated" ]; then
        apt-get "${opts[@]}" update -qq >/dev/null
        touch "$apt/lists/.updated"
    fi
    (cd "$DEBS/download-$suite" && apt-get "${opts[@]}" download -q "$pkg" >/dev/null)
    unpack "$pkg"
    test -x "$DEBS/$pkg/usr/bin/$bin"
}

fetch_suite_deb sid promtool promtool

if [ "$E2E" = 1 ]; then
    fetch_suite_deb trixie victoria-metrics victoria-metrics
    fetch_suite_deb trixie prometheus-alertmanager prometheus-alertmanager
    # Debian's Alertmanager reads its default notification template from the absolute directory
    # /usr/share/prometheus/alertmanager, which an unpacked (not installed) package does not have.
    # A copy of the binary names a directory of the same length under /tmp instead (same-length
    # replacement of that one string constant), where the test puts the package's templates.
    AM="$DEBS/prometheus-alertmanager/usr/bin"
    if [ ! -x "$AM/alertmanager-local" ]; then
        python3 - "$AM/prometheus-alertmanager" "$AM/alertmanager-local" <<'PATCH'
import sys
old, new = b"/usr/share/prometheus/alertmanagertimeout", b"/tmp/otel-toolscore-am-tmpl-000000timeout"
assert len(old) == len(new)
data = open(sys.argv[1], "rb").read()
assert data.count(old) == 1, "unexpected Alertmanager build: template path not found once"
open(sys.argv[2], "wb").write(data.replace(old, new))
PATCH
        chmod +x "$AM/alertmanager-local"
    fi
    PHX="$CACHE/phoenix-venv"
    if ! "$PHX/bin/python" -c "import phoenix" >/dev/null 2>&1; then
        rm -rf "$PHX"
        python3 -m venv "$PHX"
        "$PHX/bin/python" -m pip install -q "arize-phoenix==$PHOENIX_VERSION"
    fi
fi
if [ "$E2E" = 1 ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    echo "ensure_tools.sh: installing Debian's chromium system-wide with apt-get (about 340 MB with chromium-common;" \
         "the HTML report test opens the report in it)" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true  # a fresh machine may have no package lists yet
        apt-get install -y -q --no-install-recommends chromium >/dev/null
    fi
fi
echo "tools ready in $CACHE"
