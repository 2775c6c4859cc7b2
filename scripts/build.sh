#!/usr/bin/env bash
# Builds the extension module (into python/coextra/) and the C++ tests
# (into build/py3.X/) for every interpreter that has a .venv/py3.X.
# Extra arguments are passed to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

for venv in .venv/py3.*; do
    version=${venv#.venv/py}
    build=build/py$version
    if [ ! -f "$build/CMakeCache.txt" ] || [ "$#" -gt 0 ]; then
        cmake -S . -B "$build" -DPython_EXECUTABLE="$PWD/$venv/bin/python" "$@" >/dev/null
    fi
    echo "[build] $build"
    cmake --build "$build" -j 2 -- --no-print-directory | grep -E "error|warning" || true
    test "${PIPESTATUS[0]}" -eq 0
done
