#!/usr/bin/env bash
# Fuzz the compiled core's C kernels with libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer (specs/native.md §6).
#   fuzz/run.sh SECONDS [TARGET...]   run each target for SECONDS (default: every fuzz_*.c)
# The corpus starts from the TFRecord fixtures in tests/data and is kept in fuzz/corpus/ (not
# committed); a crash stops the run with a non-zero exit and leaves the input in fuzz/findings/.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls fuzz_*.c | sed 's/\.c$//'))
cc=$(command -v clang || command -v clang-14 || true)
[ -n "$cc" ] || { echo "fuzz/run.sh: needs clang with libFuzzer (Debian: clang-14 libclang-rt-14-dev)" >&2; exit 2; }
src=../src/readplan/records/csrc
mkdir -p build findings
for target in "${targets[@]}"; do
  kernels=$(ls $src/*.c | grep -v -e '/core.c$' -e '/buffers.c$' -e '_py.c$')
  "$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src" "$target.c" $kernels -lm -o "build/$target"
  corpus="corpus/$target"
  mkdir -p "$corpus"
  [ -n "$(ls -A "$corpus")" ] || cp ../tests/data/tfrecord/*.tfrecord "$corpus/"
  echo "fuzzing $target for ${seconds}s"
  "build/$target" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 \
    -artifact_prefix=findings/ "$corpus" 2>&1 | grep -E "^(stat::|INFO: Loaded|Done|==)|ERROR|SUMMARY" || true
  [ -z "$(ls -A findings)" ] || { echo "fuzz/run.sh: findings in fuzz/findings/" >&2; exit 1; }
done
