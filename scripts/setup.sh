#!/usr/bin/env bash
# Installs what sluice needs from Debian packages (only what is missing), then
# configures and builds it. Idempotent.
# Usage: scripts/setup.sh [build-dir [targets...]]
#        scripts/setup.sh --install-only   (the packages only: scripts/sanitize.sh, fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
INSTALL_ONLY=0
if [ "${1:-}" = "--install-only" ]; then
  INSTALL_ONLY=1
  shift
fi
BUILD_DIR="${1:-build}"
shift || true
TARGETS=()
for t in "$@"; do TARGETS+=(--target "$t"); done

PACKAGES=(cmake g++ make pkg-config libboost-dev libboost-system-dev libsqlite3-dev
          libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev catch2 libcli11-dev libssl-dev
          libgoogle-perftools-dev  # tcmalloc for sluiced (CMakeLists.txt: SLUICE_TCMALLOC)
          curl jq openssl chromium  # curl, jq, openssl: the README walkthrough (readme_test.cc)
          postgresql libpq-dev  # tests/testutil/pg_server.h runs a private server
          haproxy  # scripts/cluster-demo.sh: round-robin in front of several sluiced
          faketime  # clock skew between instances (tests/system/cluster_limits_test.cc)
          prometheus  # promtool and a real scrape (tests/system/admin_test.cc, ops_test.cc)
          python3 python3-yaml  # docs/openapi.yaml -> JSON at build time (server/openapi_embed.py)
          clang libclang-rt-14-dev)  # sanitizer and fuzz builds (scripts/sanitize.sh, fuzz.sh)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The dashboard test runs Node.js (>= 20, on the machine; Debian's as a fallback).
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

[ "$INSTALL_ONLY" -eq 1 ] && exit 0

# The tests' npm packages, as locked: playwright-core for the dashboard test
# (tests/dashboard; it drives the chromium installed above and downloads no browser of
# its own), and Redocly CLI, ajv and yaml for the OpenAPI tests (tests/openapi).
for dir in tests/dashboard tests/openapi; do
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
     [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "==> installing $dir/node_modules (npm ci)"
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
done

# CI turns warnings into errors; otherwise an existing build dir keeps its setting, so
# a demo after a CI-style test run does not rebuild everything.
WERROR_FLAG=()
[ -n "${CI:-}" ] && WERROR_FLAG=(-DSLUICE_WERROR=ON)
echo "==> building in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${WERROR_FLAG[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" "${TARGETS[@]}"
