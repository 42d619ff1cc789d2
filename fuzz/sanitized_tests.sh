#!/usr/bin/env bash
# The compiled core's Python glue (the *_py.c files, which libFuzzer's harnesses do not reach)
# under AddressSanitizer and UndefinedBehaviorSanitizer (specs/native.md §6): the core is built
# again with both sanitizers in a scratch copy of the sources, and the kernel twin tests
# (hypothesis: random, edge-case and damaged inputs, errors included) and the readers' tests run
# against it, every Python object allocated by malloc so that overruns meet a redzone.
#   fuzz/sanitized_tests.sh [PYTEST ARGS...]   default: the tests CI runs on the pure core too
# Needs gcc with libasan and libubsan (Debian: gcc); the first report stops the run, non-zero.
# Tests that run a child under an address-space limit are left out: the sanitizers' shadow
# memory alone is larger than any such limit.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/test_native_*.py tests/test_tfrecord.py
    tests/test_tfrecord_batches.py tests/test_records_integrity.py tests/test_index.py
    tests/test_example.py tests/test_example_batch.py tests/test_example_many.py
    tests/test_features_tfds.py tests/test_data_source.py tests/test_reader.py
    tests/test_reader_packed.py tests/test_tfrecord_packed.py tests/test_decode_workers.py
    tests/test_jpeg_batch.py tests/test_raw_batches.py tests/test_raw_records.py
    tests/test_tbl_hostile.py)
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
[ -e "$asan" ] && [ -e "$ubsan" ] || {
    echo "fuzz/sanitized_tests.sh: needs gcc's libasan and libubsan" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r setup.py pyproject.toml README.md src "$scratch/"
find "$scratch/src" -name '*.so' -delete
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
(cd "$scratch" && CC=gcc CFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" \
    READPLAN_REQUIRE_NATIVE=1 "$python" setup.py -q build_ext --inplace >/dev/null)
export PYTHONPATH="$scratch/src" PYTHONMALLOC=malloc LD_PRELOAD="$asan $ubsan"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The tests must meet the sanitized core, not an installed one.
"$python" -c "import sys, readplan.records._core as c; sys.exit(0 if c.__file__.startswith('$scratch') else 'the sanitized core is not the one imported: ' + c.__file__)"
"$python" -m pytest -q -p no:cacheprovider -k "not within_a_memory_bound" "${tests[@]}"
