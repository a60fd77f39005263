#!/usr/bin/env bash
# Synthesizes TinyLlama-1.1B-shaped models (random weights) in Q4_0, Q8_0 and Q4_K_M and runs
# `glia bench` on the three with 2 and 1 threads in one run; the figures go into bench/RESULTS.md
# by hand.
#
#   bench/tinyllama.sh [BUILD_DIR] [REPS] [CPU_ISA] [MORE BENCH OPTIONS...]
#
# CPU_ISA (best by default) caps the CPU kernels (glia --cpu-isa), e.g. avx2 to measure the AVX2
# kernels on an AVX-512 host, or avx2,best for both. More options go to glia bench as they are,
# e.g. --interleave (repetitions in rounds over the six configurations, all loaded at once: ~5 GiB).
# Models are written to BUILD_DIR/models (ignored by git), once; the table to
# BUILD_DIR/bench-results/tinyllama[-<isa>].txt.
set -euo pipefail
build=${1:-build}
reps=${2:-3}
isa=${3:-best}
shift $(($# < 3 ? $# : 3))
suffix=$([ "$isa" = best ] && echo "" || echo "-${isa//,/-}")
glia="$build/bin/glia"
models="$build/models"
results="$build/bench-results"
mkdir -p "$models" "$results"

for type in Q4_0 Q8_0 Q4_K_M; do
  model="$models/tinyllama-synth-$type.gguf"
  [ -f "$model" ] || "$glia" synth -q --preset tinyllama --type "$type" --out "$model"
done

lscpu | grep -E 'Model name|^CPU\(s\)|L3 cache'
"$glia" bench -m "$models/tinyllama-synth-Q4_0.gguf,$models/tinyllama-synth-Q8_0.gguf,$models/tinyllama-synth-Q4_K_M.gguf" \
  -p 512 -n 128 -t 2,1 -r "$reps" --cpu-isa "$isa" "$@" | tee "$results/tinyllama$suffix.txt"
