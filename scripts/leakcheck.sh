#!/usr/bin/env bash
# The leak harness (docs/leak-checks.md) in two sizes:
#
#   scripts/leakcheck.sh quick   what `make test` runs (a few minutes): valgrind
#                                over the quick scenarios on one CPython (3.11 if
#                                present), refleak hunting over the fast Python tests
#                                on the debug interpreter, and the check that every
#                                harness catches its planted leaks.
#   scripts/leakcheck.sh full    what `make leakcheck` runs: valgrind over every
#                                scenario on 3.11 and 3.12, ASan+UBSan+LSan over the
#                                C++ suite and every scenario (the pytest suite
#                                included) on 3.11 and 3.12, refleak hunting over the
#                                whole Python suite, and the planted-leak checks
#                                (ASan's included).
#
# Each step is one line (scripts/steps.sh); exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

source scripts/steps.sh

# Versions with a venv, among the wanted ones; the quick form takes one.
available() {
    local v
    for v in "$@"; do
        [ -x ".venv/py$v/bin/python" ] && echo "$v"
    done
}
first_version=$(available 3.11 3.12 3.13 3.10 | head -1)
if [ -z "$first_version" ]; then
    echo "no .venv/py3.X: run scripts/bootstrap.sh" >&2
    exit 1
fi
mapfile -t full_versions < <(available 3.11 3.12)
[ "${#full_versions[@]}" -eq 0 ] && full_versions=("$first_version")

# In a minimal environment: with some large environments (this machine's agent
# shell), clang 14's LeakSanitizer tracer crashes ("Tracer caught signal 11") on
# the 3.12 naive twin in about half the pytest sessions; with a clean one, never.
planted_checks() {
    env -i PATH="$PATH" HOME="$HOME" LANG="${LANG:-C.UTF-8}" PYTHONPATH="$PWD/python" \
        COEXTRA_LEAKCHECK_ASAN="${LEAKCHECK_ASAN:-0}" \
        ".venv/py$1/bin/python" -m pytest -q -p no:cacheprovider -rs tests/leakcheck
}

case "${1:-quick}" in
    quick)
        step "valgrind: quick scenarios (CPython $first_version)" valgrind/run.sh "$first_version"
        step "refleak: fast tests (debug CPython)" scripts/refleak.sh -k "not naive" \
            tests/python/test_api.py tests/python/test_lifetime.py \
            tests/python/test_collector_shapes.py tests/python/test_collector_reentrancy.py \
            tests/python/test_evalframe.py
        step "planted leaks are caught (CPython $first_version)" planted_checks "$first_version"
        ;;
    full)
        step "valgrind: all scenarios (CPython ${full_versions[*]})" \
            valgrind/run.sh "${full_versions[@]}" -- --tier full
        step "ASan+UBSan+LSan: C++ suite and all scenarios (CPython ${full_versions[*]})" \
            scripts/asan.sh "${full_versions[@]}"
        step "refleak: whole Python suite (debug CPython)" scripts/refleak.sh -k "not naive" tests/python
        LEAKCHECK_ASAN=1  # the ASan builds were just made above
        for v in "${full_versions[@]}"; do
            step "planted leaks are caught (CPython $v)" planted_checks "$v"
        done
        ;;
    *)
        echo "usage: $0 quick|full" >&2
        exit 2
        ;;
esac

steps_summary "leak harness"
