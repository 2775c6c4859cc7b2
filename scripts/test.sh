#!/usr/bin/env bash
# Runs every suite on every interpreter with a .venv/py3.X: the C++ tests
# (ctest) and the Python tests (pytest), then the packaging check.
# Exits non-zero if any suite fails; the last line counts the suites.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()
run() {
    local name=$1
    shift
    echo
    echo "=== $name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
}

for venv in .venv/py3.*; do
    version=${venv#.venv/py}
    run "ctest (CPython $version)" ctest --test-dir "build/py$version" --output-on-failure
    run "pytest (CPython $version)" env PYTHONPATH="$PWD/python" COEXTRA_TEST_PACKAGING=1 \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
    # C API / evalframe: the benchmark as a smoke test (it asserts every frame is a hit).
    run "bench_evalframe --quick (CPython $version)" env PYTHONPATH="$PWD/python" \
        "$venv/bin/python" bench/bench_evalframe.py --quick
done

# Leak harness (issue 5, docs/leak-checks.md): valgrind, refleak and planted-leak
# checks in their quick forms; `make leakcheck` runs the full ones.
run "leak harness (quick)" scripts/leakcheck.sh quick

echo
for name in "${failures[@]}"; do
    echo "FAILED: $name"
done
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
