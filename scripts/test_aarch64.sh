#!/usr/bin/env bash
# Builds glia for 64-bit ARM Linux with Debian's cross compiler and runs its tests under qemu-user:
# the portable build (the NEON kernels and the scalar ones; the x86 ones are left out) on an
# architecture whose rules differ from x86's where it matters to bit-exact tests (plain char is
# unsigned; GCC would fuse multiply-adds, which CMakeLists.txt turns off). qemu on an x86 host
# keeps x86's memory order, so this does not test the thread pool's atomics under ARM's weaker one.
#
#   scripts/test_aarch64.sh         the whole suite (~3 min to build and ~8 min to test on 2 cores)
#   scripts/test_aarch64.sh --ci    what CI runs: the kernels, quantizers, tokenizers and the golden
#                                   logits of every model in two CPU modes (~2 min of tests). Not
#                                   the CLI and server (their code is the same on every CPU; the
#                                   golden greedy continuations cover sampling): ~1 min less to build
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh  # cmake, the host's tools and header-only libraries
scripts/setup_aarch64.sh
build=${AARCH64_BUILD_DIR:-build-aarch64}
cmake -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_UNITY_BUILD=ON -DGLIA_CUDA=OFF >/dev/null
ci_tests=(test_backend_ops test_quant test_tokenizer test_gguf test_model)
if [[ ${1:-} == --ci ]]; then
  cmake --build "$build" -j "$(nproc)" --target test_golden "${ci_tests[@]}"
else
  cmake --build "$build" -j "$(nproc)"
fi
readelf -h "$build/bin/test_golden" | grep -q AArch64 || { echo "$build/bin/test_golden is not an aarch64 binary" >&2; exit 1; }
if [[ ${1:-} != --ci ]]; then
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
  exit
fi
# Two lanes of test programs side by side (on 2 cores), each run under the emulator as ctest would,
# with a time limit as ctest's (a hang fails the run instead of holding it).
emulate() { timeout 1200 qemu-aarch64 -L / "$build/bin/$1" --gtest_brief=1 "${@:2}"; }
emulate test_golden --gtest_filter='*_cpu_batch_kv16*:*_cpu_one_by_one_kv32*:pack/golden_greedy.*' > "$build/golden.log" 2>&1 &
golden=$!
status=0
for t in "${ci_tests[@]}"; do emulate "$t" || status=1; done
wait "$golden" || { status=1; cat "$build/golden.log"; }
tail -n 3 "$build/golden.log"
exit "$status"
