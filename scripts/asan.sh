#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer over coextra.
# For each given CPython (default 3.11): builds with clang and -DCOEXTRA_SANITIZE=ON
# into build/asan-py3.X (the module goes to build/asan-py3.X/python/coextra with a
# copy of the package's Python files, so the normal build in python/coextra is
# untouched), then runs
#   1. the C++ suite (ctest; the runtime is linked into the test binary),
#   2. the leak scenarios of the given tier (default "full": includes the whole
#      pytest suite) with the ASan runtime preloaded into the interpreter
#      (tests/scenarios/run.py --tool asan).
# Fails on any sanitizer report. Usage: scripts/asan.sh [3.X ...] [-- run.py args]
set -uo pipefail
cd "$(dirname "$0")/.."

source scripts/versions_args.sh
parse_versions 3.11 :: "$@"
set -- "${rest[@]}"
[ "$#" -eq 0 ] && set -- --tier full

# What every sanitized process gets (the scenario runner sets its own, the same).
export PYTHONMALLOC=malloc
export ASAN_OPTIONS="detect_leaks=1:exitcode=99"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99"

build_sanitized() {
    local version=$1 build=build/asan-py$1
    local module_dir=$PWD/$build/python/coextra
    # The test extensions go beside the staged package, never into
    # tests/python/_ext: instrumented copies there would replace the plain
    # build's (same file names) and fail to load in every later plain run.
    cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCOEXTRA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCOEXTRA_MODULE_DIR="$module_dir" \
        -DCOEXTRA_TEST_EXT_DIR="$PWD/$build/python/_ext" \
        -DPython_EXECUTABLE="$PWD/.venv/py$version/bin/python" >/dev/null || return 1
    echo "[asan] building $build"
    cmake --build "$build" -j 2 -- --no-print-directory | grep -E "error|warning"
    test "${PIPESTATUS[0]}" -eq 0 || return 1
    scripts/stage_package.sh "$build/python" || return 1
    # The module really is instrumented, and it is the one that gets imported.
    local reports
    reports=$(nm -D "$module_dir"/_coextra*.so | grep -c __asan_report_load)
    [ "$reports" -gt 0 ] || {
        echo "[asan] $module_dir has no ASan instrumentation" >&2
        return 1
    }
}

status=0
for version in "${versions[@]}"; do
    venv_python "$version" || { status=1; continue; }
    build_sanitized "$version" || { status=1; continue; }
    echo "[asan] ctest (CPython $version)"
    LSAN_OPTIONS="suppressions=$(python3 tests/scenarios/run.py --lsan-suppressions "$version"):print_suppressions=0" \
        ctest --test-dir "build/asan-py$version" --output-on-failure | tail -3
    test "${PIPESTATUS[0]}" -eq 0 || status=1
    COEXTRA_TEST_EXT_DIR="$PWD/build/asan-py$version/python/_ext" \
        "$python" tests/scenarios/run.py --tool asan --python "$python" \
        --pythonpath "build/asan-py$version/python" "$@" || status=1
done
exit $status
