#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh) and runs every test: unit, property and
# system tests (the real sluiced on loopback). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
scripts/setup.sh "$BUILD_DIR"
echo "==> running tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
