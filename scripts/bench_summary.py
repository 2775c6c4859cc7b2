"""Merges every benchmark result of one `make bench` run into summary.json and summary.md.

    python scripts/bench_summary.py RESULTS_DIR [--markdown-copy docs/benchmarks.md]

Reads every *.json in RESULTS_DIR (except the summary itself) in one of two formats:

* the summary format the bench/*.py scripts write with --json:
  {"suite": str, "python": str, "how": str, "groups": [{"title", "unit", "reference",
   "results": {name: value}}], "checks": [{"what", "value", "passed"}]  (optional)};
* Google Benchmark's JSON (--benchmark_out_format=json): a group is a benchmark's
  name up to the first '/', its reference is the group's first benchmark; CPU
  time per iteration (the median when repetitions were run);
* a pyperf suite (pyperf's -o FILE): one group, the first benchmark its reference,
  the median per call.

A file in none of these formats is listed as not merged (and the run fails).

Every figure is reported as a ratio to its group's reference, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def from_google_benchmark(name: str, data: dict) -> dict:
    runs: dict[str, float] = {}
    medians = any(b.get("aggregate_name") == "median" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        if medians and b.get("aggregate_name") != "median":
            continue
        if not medians and b.get("run_type", "iteration") != "iteration":
            continue
        run_name = b.get("run_name", b["name"])
        runs.setdefault(run_name, b["cpu_time"] * TIME_UNITS_NS[b.get("time_unit", "ns")])
    groups: dict[str, dict] = {}
    for run_name, ns in runs.items():
        group, _, what = run_name.partition("/")
        entry = groups.setdefault(group, {"title": f"{group} (C++, {name})", "unit": "ns",
                                          "reference": what or run_name, "results": {}})
        entry["results"][what or run_name] = ns
    context = data.get("context", {})
    return {"suite": f"{name} (Google Benchmark)",
            "how": f"Google Benchmark, CPU time per iteration, {'median of repetitions' if medians else 'one run'}; "
                   f"{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz",
            "groups": list(groups.values())}


def from_pyperf(name: str, path: str) -> dict:
    import pyperf

    suite = pyperf.BenchmarkSuite.load(path)
    results = {b.get_name(): b.median() * 1e9 for b in suite.get_benchmarks()}
    return {"suite": f"{name} (pyperf)", "how": "pyperf, median per call",
            "groups": [{"title": name, "unit": "ns", "reference": next(iter(results)), "results": results}]}


def load(path: str) -> dict:
    with open(path) as fh:
        data = json.load(fh)
    name = os.path.splitext(os.path.basename(path))[0]
    if "groups" in data:
        return data
    if "benchmarks" in data and "context" in data:
        return from_google_benchmark(name, data)
    if "benchmarks" in data and "version" in data and "metadata" in data:
        return from_pyperf(name, path)
    raise ValueError(f"{path}: neither the summary format nor Google Benchmark's JSON")


def with_ratios(suite: dict) -> dict:
    for group in suite["groups"]:
        reference = group["results"][group["reference"]]
        group["ratios"] = {k: (v / reference if reference else None) for k, v in group["results"].items()}
    return suite


def format_value(value: float, unit: str) -> str:
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def markdown(summary: dict) -> str:
    env = summary["environment"]
    out = [
        "# coextra benchmarks",
        "",
        f"Produced by `make bench` on {env['date']}: CPython {env['python']}, {env['machine']}.",
        "Every ratio compares two figures measured side by side in the same run "
        "(the group's first row is the reference, 1.00x); absolute figures depend on the machine "
        "and are only indicative.",
    ]
    for suite in summary["suites"]:
        how = suite.get("how", "").rstrip(". ")
        if "python" in suite:
            how += f"; CPython {suite['python']}"
        out += ["", f"## {suite['suite']}", "", how[:1].upper() + how[1:] + "."]
        for group in suite["groups"]:
            unit = group["unit"]
            out += ["", f"**{group['title']}**", "", f"| | {unit} | ratio |", "|---|---:|---:|"]
            for name, value in group["results"].items():
                ratio = group["ratios"][name]
                shown = f"`{name}`" if unit == "ns" else name
                out.append(f"| {shown} | {format_value(value, unit)} | "
                           f"{'n/a' if ratio is None else f'{ratio:.2f}x'} |")
        for check in suite.get("checks", []):
            out += ["", f"Check: {check['what']}: {check['value']:.1f} -- "
                        f"{'met' if check['passed'] else 'NOT met'}."]
    if summary.get("not_merged"):
        out += ["", "Not merged (unknown format): " + ", ".join(summary["not_merged"])]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="directory of per-benchmark JSON files")
    parser.add_argument("--markdown-copy", help="also write the markdown table here")
    parser.add_argument("--python", default=platform.python_version(), help="interpreter the run used")
    args = parser.parse_args()

    suites: list[dict[str, Any]] = []
    not_merged: list[str] = []
    for entry in sorted(os.listdir(args.results)):
        if entry.endswith(".json") and not entry.startswith("summary"):
            try:
                suites.append(with_ratios(load(os.path.join(args.results, entry))))
            except (ValueError, KeyError, TypeError) as error:
                print(f"not merged: {error}", file=sys.stderr)
                not_merged.append(entry)
    if not suites:
        print(f"no benchmark results in {args.results}", file=sys.stderr)
        return 1
    summary = {
        "environment": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": args.python,
                        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}"},
        "suites": suites,
        "not_merged": not_merged,
    }
    with open(os.path.join(args.results, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    text = markdown(summary)
    with open(os.path.join(args.results, "summary.md"), "w") as fh:
        fh.write(text)
    if args.markdown_copy:
        with open(args.markdown_copy, "w") as fh:
            fh.write(text)
    print(text)
    return 1 if not_merged else 0


if __name__ == "__main__":
    sys.exit(main())
