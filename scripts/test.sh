#!/usr/bin/env bash
# Runs every suite on every interpreter with a .venv/py3.X: the C++ tests
# (ctest) and the Python tests (pytest), then the packaging check.
# Exits non-zero if any suite fails; the last line counts the suites.
set -uo pipefail
cd "$(dirname "$0")/.."

source scripts/steps.sh

for venv in .venv/py3.*; do
    version=${venv#.venv/py}
    step "ctest (CPython $version)" ctest --test-dir "build/py$version" --output-on-failure
    step "pytest (CPython $version)" env PYTHONPATH="$PWD/python" COEXTRA_TEST_PACKAGING=1 \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
    # C API / evalframe: the benchmark as a smoke test (it asserts every frame is a hit).
    step "bench_evalframe --quick (CPython $version)" env PYTHONPATH="$PWD/python" \
        "$venv/bin/python" bench/bench_evalframe.py --quick
    # The backend on real programs: every result checked against a run without a hook.
    step "bench_programs --quick (CPython $version)" env PYTHONPATH="$PWD/python" \
        "$venv/bin/python" bench/bench_programs.py --quick
    # Conformance (docs/conformance.md): CPython's own tests with the backend in every
    # process against a plain run; `make conformance` runs the large selection.
    step "conformance --selection small (CPython $version)" \
        "$venv/bin/python" tests/conformance/run.py --selection small
done

# Leak harness (docs/leak-checks.md): valgrind, refleak and planted-leak
# checks in their quick forms; `make leakcheck` runs the full ones.
step "leak harness (quick)" scripts/leakcheck.sh quick

steps_summary suites
