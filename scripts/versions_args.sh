# Sourced by valgrind/run.sh and scripts/asan.sh: which interpreters to run on.
#
# parse_versions splits "3.11 3.12 -- ARGS..." into the array `versions`
# (default: the arguments of `parse_versions` before "::") and the remaining
# positional ARGS in the array `rest`.
parse_versions() {
    local -a defaults=()
    while [ "$#" -gt 0 ] && [ "$1" != "::" ]; do
        defaults+=("$1")
        shift
    done
    shift
    versions=()
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
        versions+=("$1")
        shift
    done
    [ "${1:-}" = "--" ] && shift
    [ "${#versions[@]}" -eq 0 ] && versions=("${defaults[@]}")
    rest=("$@")
}

# Sets `python` to CPython $1's venv interpreter; returns 1, saying so on
# stderr, when that interpreter is not set up.
venv_python() {
    python=.venv/py$1/bin/python
    [ -x "$python" ] && return 0
    echo "no $python: CPython $1 is not set up here (scripts/bootstrap.sh)" >&2
    return 1
}
