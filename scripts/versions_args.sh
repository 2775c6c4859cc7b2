# Sourced by valgrind/run.sh and scripts/asan.sh: splits "3.11 3.12 -- ARGS..." into
# the array `versions` (default: the arguments of `parse_versions` after the
# first) and the remaining positional ARGS in the array `rest`.
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
