#!/usr/bin/env bash
# Runs the leak scenarios (tests/scenarios/LIST) under valgrind memcheck, with
# PYTHONMALLOC=malloc and the suppressions in this directory, on each given
# CPython (default: 3.11 and 3.12) that has a .venv/py3.X with the extension built.
# Fails on any definitely/indirectly lost block or invalid read/write/free.
#
#   valgrind/run.sh                        quick tier on 3.11 and 3.12
#   valgrind/run.sh 3.11 -- --tier full    full tier on 3.11
#   valgrind/run.sh 3.12 -- planted-naive-twin
set -uo pipefail
cd "$(dirname "$0")/.."

versions=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    versions+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
[ "${#versions[@]}" -eq 0 ] && versions=(3.11 3.12)

if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed (scripts/bootstrap.sh installs it)" >&2
    exit 1
fi
status=0
for version in "${versions[@]}"; do
    python=.venv/py$version/bin/python
    if [ ! -x "$python" ]; then
        echo "no $python: CPython $version is not set up here (scripts/bootstrap.sh)" >&2
        status=1
        continue
    fi
    "$python" tests/scenarios/run.py --tool valgrind --python "$python" "$@" || status=1
done
exit $status
