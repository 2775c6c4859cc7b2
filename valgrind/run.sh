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

source scripts/versions_args.sh
parse_versions 3.11 3.12 :: "$@"
set -- "${rest[@]}"

if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed (scripts/bootstrap.sh installs it)" >&2
    exit 1
fi
status=0
for version in "${versions[@]}"; do
    venv_python "$version" || { status=1; continue; }
    "$python" tests/scenarios/run.py --tool valgrind --python "$python" "$@" || status=1
done
exit $status
