#!/usr/bin/env bash
# Refleak hunting (tests/refleak/refleak_plugin.py, like CPython's regrtest -R) on
# Debian's debug interpreter (.venv/dbg, made by scripts/bootstrap.sh from
# python3.11-dbg on Debian 12 or python3.13-dbg on Debian 13). Builds coextra
# against that interpreter's own headers into build/dbg (module in
# build/dbg/python/coextra with a copy of the package's Python files), then runs
# pytest with the plugin: every test runs warm-up + measured times and the run
# fails if a test's total references or allocated blocks grow on every measured run.
#
#   scripts/refleak.sh                      the whole Python suite
#   scripts/refleak.sh -m "not slow" ...    any pytest arguments (default: tests/python)
set -uo pipefail
cd "$(dirname "$0")/.."

python=.venv/dbg/bin/python
if [ ! -x "$python" ] || ! "$python" -c 'import sys; sys.gettotalrefcount' 2>/dev/null; then
    echo "no debug interpreter in .venv/dbg (scripts/bootstrap.sh makes it)" >&2
    exit 1
fi
build=build/dbg
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DPython_EXECUTABLE="$PWD/$python" -DCOEXTRA_BUILD_TESTS=OFF \
        -DCMAKE_BUILD_TYPE=Debug -DCOEXTRA_MODULE_DIR="$PWD/$build/python/coextra" >/dev/null || exit 1
fi
echo "[refleak] building $build"
cmake --build "$build" -j 2 -- --no-print-directory | grep -E "error|warning"
test "${PIPESTATUS[0]}" -eq 0 || exit 1
(cd python && find coextra -type f ! -name '*.so' ! -path '*__pycache__*' \
    -exec cp --parents {} "../$build/python/" \;)

[ "$#" -eq 0 ] && set -- tests/python
# That test shows the naive twin leaking, on purpose: the harness would (rightly)
# report it (tests/refleak/planted/ holds the twin that proves the harness works).
PYTHONPATH="$PWD/$build/python:$PWD/tests/refleak" exec "$python" -m pytest -q \
    -p no:cacheprovider -p refleak_plugin \
    --deselect tests/python/test_lifetime.py::test_naive_twin_leaks_the_self_referencing_cycle "$@"
