#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (GoogleTest through ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
