#!/usr/bin/env bash
# Continuous-batching benchmark: starts `glia serve` on a synthesized TinyLlama-geometry Q4_0 model
# (random weights, `glia synth`) with 16 slots and measures aggregate generation throughput at 1, 4,
# 8 and 16 concurrent streams with glia-bench-server; the figures go into bench/RESULTS.md by hand.
#
#   bench/server.sh [BUILD_DIR] [N_GEN] [THREADS]
#
# The model is written to BUILD_DIR/models (ignored by git) once; the table to
# BUILD_DIR/bench-results/server-t<threads>.txt.
set -euo pipefail
build=${1:-build}
n_gen=${2:-64}
threads=${3:-2}
glia="$build/bin/glia"
model="$build/models/tinyllama-synth-Q4_0.gguf"
results="$build/bench-results"
mkdir -p "$build/models" "$results"
[ -f "$model" ] || "$glia" synth -q --preset tinyllama --type Q4_0 --out "$model"

log=$(mktemp)
"$glia" serve -m "$model" --port 0 --parallel 16 -c 512 -t "$threads" --metrics 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 600); do
  port=$(sed -n 's|^glia serve: listening on http://[^:]*:\([0-9]*\)$|\1|p' "$log")
  [ -n "$port" ] && break
  kill -0 $server 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "server did not start"; cat "$log"; exit 1; }

lscpu | grep -E 'Model name|^CPU\(s\)'
echo "glia serve --parallel 16 -t $threads; $n_gen tokens per stream"
"$build/bin/glia-bench-server" --port "$port" --streams 1,4,8,16 -n "$n_gen" | tee "$results/server-t$threads.txt"
