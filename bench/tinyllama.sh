#!/usr/bin/env bash
# Synthesizes TinyLlama-1.1B-shaped models (random weights) in Q4_0, Q8_0 and Q4_K_M and runs
# `glia bench` on each with 1 and 2 threads; the figures go into bench/RESULTS.md by hand.
#
#   bench/tinyllama.sh [BUILD_DIR] [REPS] [CPU_ISA]
#
# CPU_ISA (best by default) caps the CPU kernels (glia --cpu-isa), e.g. avx2 to measure the AVX2
# kernels on an AVX-512 host. Models are written to BUILD_DIR/models (ignored by git), once; the
# tables to BUILD_DIR/bench-results/<type>-t<threads>[-<isa>].txt.
set -euo pipefail
build=${1:-build}
reps=${2:-3}
isa=${3:-best}
suffix=$([ "$isa" = best ] && echo "" || echo "-$isa")
glia="$build/bin/glia"
models="$build/models"
results="$build/bench-results"
mkdir -p "$models" "$results"

for type in Q4_0 Q8_0 Q4_K_M; do
  model="$models/tinyllama-synth-$type.gguf"
  [ -f "$model" ] || "$glia" synth -q --preset tinyllama --type "$type" --out "$model"
done

lscpu | grep -E 'Model name|^CPU\(s\)|L3 cache'
for threads in 2 1; do
  for type in Q4_0 Q8_0 Q4_K_M; do
    model="$models/tinyllama-synth-$type.gguf"
    "$glia" bench -m "$model" -p 512 -n 128 -t "$threads" -r "$reps" --cpu-isa "$isa" | tee "$results/$type-t$threads$suffix.txt"
  done
done
