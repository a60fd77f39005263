#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine, in one call: the op-by-op harness (cuda vs ref), the
# golden logits with --backend cuda, a demo run, then batch-1 decode and prompt figures on
# synthesized models (TinyLlama and Llama-3-8B geometry) with the fraction of the device's measured
# copy bandwidth. Prints a short table last; full logs and JSON go to $LOGS (default /tmp/cuda_check).
#
#   bench/cuda_check.sh [BIN_DIR]     BIN_DIR holds glia, test_backend_ops, test_golden
#                                     (default: build/bin; see bench/cuda_pack.sh for a machine
#                                     without the build dependencies)
# Environment: LOGS, MODELS (where synthesized models are written), PRESETS (default below),
# GEN (decode tokens, default 128), PROMPT (default 512).
set -u
BIN=${1:-build/bin}
LOGS=${LOGS:-/tmp/cuda_check}
MODELS=${MODELS:-/tmp/cuda_models}
GEN=${GEN:-128}
PROMPT=${PROMPT:-512}
PRESETS=${PRESETS:-"tinyllama:Q4_0 tinyllama:Q8_0 tinyllama:F16 tinyllama:Q4_K_M llama3-8b:Q4_0 llama3-8b:Q4_K_M llama3-8b:Q8_0 llama3-8b:F16"}
mkdir -p "$LOGS" "$MODELS"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv 2>&1 | tee "$LOGS/gpu.txt"

stamp "op harness (cuda vs ref)"
timeout 150 "$BIN/test_backend_ops" --gtest_filter='cuda/*:cuda_backend.*' --gtest_brief=1 >"$LOGS/ops.log" 2>&1
ops_rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|Failure|error" "$LOGS/ops.log" | head -40

stamp "golden logits (cuda)"
timeout 200 "$BIN/test_golden" --gtest_filter='*cuda*' >"$LOGS/golden.log" 2>&1
golden_rc=$?
grep -E "max abs deviation" "$LOGS/golden.log" | sed 's/^/  /' | head -80
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|Failure" "$LOGS/golden.log" | head -40

stamp "op timings (graph replays)"
timeout 120 "$BIN/test_backend_ops" --gtest_also_run_disabled_tests --gtest_filter='*CudaDecodePerf*' >"$LOGS/perf.log" 2>&1
sed -n '/^op  /,/^\[/p' "$LOGS/perf.log" | grep -v '^\['

demo=""
for d in "${GLIA_DEMO_MODEL:-}" ../shared/testdata/models/brown-q8_0.gguf /tmp/glia-testdata/models/brown-q8_0.gguf; do
  [ -n "$d" ] && [ -f "$d" ] && demo=$d && break
done
if [ -n "$demo" ]; then
  stamp "demo run: $demo"
  timeout 60 "$BIN/glia" run --backend cuda -m "$demo" -p "The jury said" -n 32 --temp 0 2>&1 | tail -4
fi

rows=()
for spec in $PRESETS; do
  preset=${spec%%:*}
  type=${spec##*:}
  model="$MODELS/$preset-$type.gguf"
  if [ ! -f "$model" ]; then
    stamp "synth $preset $type"
    timeout 300 "$BIN/glia" synth -q --preset "$preset" --type "$type" --out "$model" >"$LOGS/synth-$preset-$type.log" 2>&1 ||
      { rows+=("$preset $type: synth failed ($(tail -1 "$LOGS/synth-$preset-$type.log"))"); continue; }
  fi
  stamp "bench $preset $type"
  json="$LOGS/bench-$preset-$type.json"
  if timeout 300 "$BIN/glia" bench --backend cuda -m "$model" -p "$PROMPT" -n "$GEN" -r 3 --json >"$json" 2>"$LOGS/bench-$preset-$type.err"; then
    rows+=("$(python3 - "$json" "$preset" "$type" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))
cells = []
for t in tests:
    name = f"pp{t['n_prompt']}" if t['n_prompt'] else f"tg{t['n_gen']}"
    frac = f" = {100*t['bandwidth_fraction']:.1f}% of {t['bandwidth_gbps']:.0f} GB/s" if t['n_gen'] else ""
    if t['n_gen']:
        frac += f" (replayed steps {t.get('replayed_steps', 0)}/{t.get('one_token_steps', 0)})"
    cells.append(f"{name} {t['avg_ts']:.1f} ± {t['stddev_ts']:.1f} t/s{frac}")
print(f"{sys.argv[2]} {sys.argv[3]} ({tests[0]['model_size']/2**30:.2f} GiB, {tests[0]['device']}): " + "; ".join(cells))
PY
)")
  else
    rows+=("$preset $type: bench failed ($(tail -1 "$LOGS/bench-$preset-$type.err"))")
  fi
  # Where a step's time goes (each op waits for the GPU, so launch gaps count too).
  if [ "$preset" = "${PROFILE_PRESET:-llama3-8b}" ] && [ "$type" = "${PROFILE_TYPE:-Q4_0}" ]; then
    timeout 120 "$BIN/glia" run --backend cuda -m "$model" -p "hello" -n 32 --temp 0 --profile >/dev/null 2>"$LOGS/profile-$preset-$type.txt"
    grep -vE "^$" "$LOGS/profile-$preset-$type.txt" | tail -28
  fi
  # A model is only needed for its own bench; the disk is not large enough for all of them at once.
  case "$preset" in llama3-8b) rm -f "$model" ;; esac
done

echo
echo "== CUDA check ($(head -2 "$LOGS/gpu.txt" | tail -1 | cut -d, -f1), $(( $(date +%s) - t0 )) s)"
echo "op harness: rc $ops_rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOGS/ops.log" | tr '\n' ' ')"
echo "golden:     rc $golden_rc; $(grep -E '^\[  (PASSED|FAILED) ' "$LOGS/golden.log" | tr '\n' ' ')"
for r in "${rows[@]}"; do echo "$r"; done
# One archive of the logs for machines that hand back only a few files.
[ -n "${ARCHIVE:-}" ] && tar -czf "$ARCHIVE" -C "$(dirname "$LOGS")" "$(basename "$LOGS")"
exit 0
