#!/usr/bin/env bash
# `make bench`: every benchmark, one run, one summary.
#
# Runs, with the newest supported interpreter (.venv/py3.X) and its build:
#   * every bench/*.py as `python bench/NAME.py --json bench/results/NAME.json`
#     (the summary format of scripts/bench_summary.py);
#   * every Google Benchmark binary in build/py3.X/bench/ (CMake puts them there),
#     with JSON output to bench/results/BINARY.json;
# then merges them into bench/results/summary.json and summary.md, and copies the
# markdown to docs/benchmarks.md (the README includes it). A benchmark that fails
# is reported and the others still run; the exit status is then non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."

venv=$(ls -d .venv/py3.* | sort -V | tail -1) || exit 1
version=${venv#.venv/py}
python="$PWD/$venv/bin/python"
results=bench/results
rm -rf "$results"
mkdir -p "$results"
export PYTHONPATH="$PWD/python"
failed=()

for script in bench/*.py; do
    name=$(basename "$script" .py)
    echo "[bench] $script" >&2
    "$python" "$script" --json "$results/$name.json" >"$results/$name.log" 2>&1 || failed+=("$script")
done

found=0
if [ -d "build/py$version/bench" ]; then
    for binary in "build/py$version"/bench/*; do
        [ -f "$binary" ] && [ -x "$binary" ] || continue
        found=1
        name=$(basename "$binary")
        echo "[bench] $binary" >&2
        "$binary" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
            --benchmark_out="$results/$name.json" --benchmark_out_format=json >"$results/$name.log" 2>&1 ||
            failed+=("$binary")
    done
fi
if [ "$found" = 0 ]; then
    echo "[bench] no Google Benchmark binaries in build/py$version/bench (is libbenchmark-dev installed?)" >&2
fi

"$python" scripts/bench_summary.py "$results" --python "$version" --markdown-copy docs/benchmarks.md ||
    failed+=("scripts/bench_summary.py")
echo "[bench] $results/summary.json, $results/summary.md, docs/benchmarks.md" >&2
for what in "${failed[@]}"; do
    echo "[bench] FAILED: $what (see its log in $results/)" >&2
done
[ "${#failed[@]}" -eq 0 ]
