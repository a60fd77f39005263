#!/usr/bin/env bash
# Sets up, builds and continues a prompt with the demo model (a tiny Llama trained on the Brown corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target glia
build/bin/glia run -m ../shared/testdata/models/brown-f32.gguf -p "${1:-The jury said}" -n "${2:-48}" --temp 0
