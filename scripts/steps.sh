# Sourced by scripts/test.sh and scripts/leakcheck.sh: runs named steps, goes
# on after a failure, and sums up at the end.
#
#   step NAME COMMAND...   runs COMMAND under a "=== NAME" header, then prints
#                          how long it took; counts it passed or failed
#   steps_summary LABEL    lists the failed steps, prints "LABEL: N passed,
#                          M failed" and returns non-zero if any failed

passed=0
failed=0
failures=()

step() {
    local name=$1
    shift
    echo
    echo "=== $name"
    local t0=$SECONDS
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
    echo "--- $name: $((SECONDS - t0)) s"
}

steps_summary() {
    echo
    local name
    for name in "${failures[@]}"; do
        echo "FAILED: $name"
    done
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
