#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (GoogleTest through ctest).
# A unity build (CMake batches each target's sources into a few translation units, so the heavy
# headers, GoogleTest, nlohmann-json, fmt, are parsed a few times instead of once per file) takes
# half the time of a file-by-file one on 2 cores (6.1 against 12.7 min); it also keeps the sources
# unity-clean, i.e. no two files of one target define the same file-local name.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
