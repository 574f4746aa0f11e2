#!/usr/bin/env bash
# Fuzzes the afp driver's parsers of server input (lib/transfer/afp/afp_fuzz.cc)
# with libFuzzer, AddressSanitizer and UBSan for a bounded time, from a seed
# corpus of the captures' server replies (../shared/vectors/afp). Exits
# non-zero on a crash, a sanitizer report or an uncaught exception.
#   scripts/fuzz-afp.sh [SECONDS]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build=build-fuzz
if ! command -v clang++ >/dev/null; then
  echo "fuzz-afp: clang++ is missing; run scripts/install-deps.sh" >&2
  exit 1
fi
# Everything the target links is instrumented (fuzzer coverage, ASan, UBSan);
# only the fuzz target and its seed tool are built.
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$san" -DCHOKEPOINT_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target afp_fuzz afp_fuzz_seed
corpus="$build/afp-corpus"
mkdir -p "$corpus" "$build/afp-artifacts"
"$build/bin/afp_fuzz_seed" "$corpus"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
"$build/bin/afp_fuzz" -max_total_time="$seconds" -max_len=16384 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$build/afp-artifacts/" "$corpus"
