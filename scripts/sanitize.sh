#!/usr/bin/env bash
# Builds glia with AddressSanitizer + UndefinedBehaviorSanitizer (GCC) in build-asan and runs the
# whole ctest suite there (the fuzz corpus replays included; .ci/run runs it after scripts/test.sh).
# Any sanitizer report aborts the process that hit it, so the run fails; its log names the test
# (GoogleTest prints each test's name as it starts), but for leaks, which are reported at exit, by
# the shard only. Extra arguments go to ctest.
# ctest sees each test program as 8 shards (GLIA_TEST_SHARDS, tests/CMakeLists.txt), not one test
# per GoogleTest test: ~100 processes instead of ~1800, 341 -> 246 s of tests on 2 cores. So -R and
# -E pick programs and shards; GoogleTest's GTEST_FILTER picks tests inside them.
#
#   scripts/sanitize.sh                 # build + every test
#   BUILD_DIR=/tmp/asan scripts/sanitize.sh -R fuzz
#   GTEST_FILTER='*golden_greedy*' scripts/sanitize.sh -R test_golden
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

build_dir=${BUILD_DIR:-build-asan}
jobs=${JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

t0=$(date +%s)
# -O1 keeps the golden-logit and backend tests within minutes under ASan; -g1 (GCC's line tables
# only, its -gline-tables-only) still gives stack traces with file:line but compiles and links
# faster than -g. (The top-level CMakeLists adds -fexpensive-optimizations, an -O2 flag, for the
# VZEROUPPER that GCC 12 inserts only under it: without, the reference backend's golden test ran
# 35x slower after a CPU-backend test in the same process.)
# No -DNDEBUG: asserts stay on. Frame pointers and -fno-sanitize-recover come from
# GLIA_SANITIZE (top-level CMakeLists).
# scripts/sanitize.cmake compiles the test harness (tests/) at -O0 without instrumentation: the engine
# code it drives is what is checked, and a test file then compiles in ~40% of the instrumented time.
# Measured costs and the resulting CI estimate: .ci/run.
# A unity build, as in scripts/test.sh. Without the CUDA backend: the sanitizers cannot see GPU code,
# and CI has no GPU for its host code to drive (scripts/test.sh builds and tests it).
# The AVX-512 VNNI / AMX kernels only where they can run under the sanitizers (GLIA_AVX512_KERNELS'
# default, AUTO).
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DGLIA_SANITIZE=address,undefined -DGLIA_CUDA=OFF -DGLIA_TEST_SHARDS=8 \
  -DCMAKE_PROJECT_INCLUDE="$PWD/scripts/sanitize.cmake" >/dev/null
cmake --build "$build_dir" -j "$jobs"
t1=$(date +%s)

# halt_on_error + abort_on_error: the first report kills the process (abort, so ctest sees a
# failure even where a test forks the glia binary); detect_leaks: leaks fail at exit.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:print_stacktrace=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=print_suppressions=0
status=0
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "$@" || status=$?
t2=$(date +%s)
echo "sanitize.sh: build $((t1 - t0)) s, tests $((t2 - t1)) s, total $((t2 - t0)) s"
exit $status
