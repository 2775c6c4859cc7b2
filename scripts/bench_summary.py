"""Merges every benchmark result of one `make bench` run into summary.json and summary.md.

    python scripts/bench_summary.py RESULTS_DIR [--markdown-copy docs/benchmarks.md] [--readme README.md]
    python scripts/bench_summary.py --from-markdown docs/benchmarks.md [--readme README.md] [--markdown-copy FILE]

Reads every *.json in RESULTS_DIR (except the summary itself and the results of
the commands make bench does not run, below) in one of these formats:

* the summary format the bench/*.py scripts write with --json:
  {"suite": str, "python": str, "how": str, "groups": [{"title", "unit", "reference",
   "results": {name: value}}], "checks": [{"what", "value", "passed"}]  (optional)};
* Google Benchmark's JSON (--benchmark_out_format=json): a group is a benchmark's
  name up to the first '/', its reference is the group's first benchmark; CPU
  time per iteration (the median when repetitions were run);
* a pyperf suite (pyperf's -o FILE): one group, the first benchmark its reference,
  the median per call;
* bench/bench_torch_pauses.py's --json (make bench runs it; it writes nothing
  when torch is missing, and the page then says how to run it).

A file in none of these formats is listed as not merged (and the run fails).
A file named BENCH-pyX.Y.json holds a suite run on another interpreter than
the run's own: its section, headed "... on CPython X.Y", follows the same
suite's, and the README's block leaves it out.

Every figure is reported as a ratio to its group's reference, measured in the same run.

The results of commands make bench does not run (EXTRAS: the stress demo, the
soak, CPython's tests under the backend, the leak scenarios) get a section each when their file is
in RESULTS_DIR, dated by the file, and otherwise a line naming the command that
writes it; make bench keeps these files from one run to the next.

--readme FILE rewrites the block between README_BEGIN and README_END in FILE:
the headline figures of the same run (HEADLINES), with the command and the
date, so that no figure of the README is written by hand. --from-markdown
reads a summary back from a page this script wrote, for that block, or to
write the page again with this script's sections (RESULTS_DIR, if given,
for the commands make bench does not run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from typing import Any, Optional

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


TORCH_SUITE = "Pauses under torch.compile (bench_torch_pauses.py)"
TORCH_COMMAND = ("PYTHONPATH=python <venv with torch>/bin/python bench/bench_torch_pauses.py "
                 "--waves 12 --per-wave 10 --json bench/results/bench_torch_pauses.json")


def from_torch_pauses(data: dict) -> dict:
    return {"suite": TORCH_SUITE, "python": data["python"],
            "how": f"torch {data['torch']}, {data['waves']} waves of {data['per_wave']} compiled models, "
                   "gc.collect() after every wave",
            "groups": [{"title": "the longest pause", "unit": "ms",
                        "reference": "CPython's longest collection in the same run",
                        "results": {"CPython's longest collection in the same run": data["gc_s"] * 1e3,
                                    "coextra's longest automatic pause": data["coextra_s"] * 1e3}},
                       {"title": "time in automatic passes", "unit": "s", "reference": "run",
                        "results": {"run": data["seconds"],
                                    "automatic passes": data["auto_share"] * data["seconds"]}}],
            "checks": [{"what": f"dropped caches still attached after the last gc.collect(), of "
                                f"{data['dropped']:,} (bound 2,000)", "value": data["dead_attached"],
                        "passed": data["dead_attached"] <= 2_000}]}


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
    if "torch" in data and "coextra_s" in data:
        return from_torch_pauses(data)
    raise ValueError(f"{path}: neither the summary format nor Google Benchmark's JSON")


# make bench runs the collector's and EphemeronMap's benchmarks on other
# interpreters too, each writing BENCH-pyX.Y.json: a suite of its own, headed
# "... on CPython X.Y", placed after the same suite of the run's interpreter
# and kept out of the README's block (which is about that interpreter).
OTHER_INTERPRETER_FILE = re.compile(r"(.+)-py(\d+\.\d+)\.json")
OTHER_INTERPRETER_HEADING = re.compile(r".+ on CPython \d+\.\d+")


def merge_order(name: str) -> tuple[str, str]:
    m = OTHER_INTERPRETER_FILE.fullmatch(name)
    return (m.group(1), m.group(2)) if m else (name[:-len(".json")], "")


def on_other_interpreter(suite: dict) -> bool:
    return OTHER_INTERPRETER_HEADING.fullmatch(suite["suite"]) is not None


def with_ratios(suite: dict) -> dict:
    for group in suite["groups"]:
        reference = group["results"][group["reference"]]
        group["ratios"] = {k: (v / reference if reference else None) for k, v in group["results"].items()}
    return suite


def format_value(value: float, unit: str) -> str:
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def format_check_value(value: float, passed: bool, target: Optional[float]) -> str:
    """A check's figure with one decimal, or as many more (up to four) as it
    takes for a missed target not to print as the target itself (5.04
    against "at most 5" shows 5.04, not 5.0; a figure read back from a page
    is what the page printed)."""
    decimals = 1
    hidden = not passed and target is not None and value != target
    while hidden and decimals < 4 and round(value, decimals) == target:
        decimals += 1
    return f"{value:.{decimals}f}"


def check_target(what: str) -> Optional[float]:
    """The number after "target <=" or "target >=" in a check's description."""
    m = re.search(r"target (?:<=|>=) ([\d.]+)", what)
    return float(m.group(1)) if m else None


RERUN = "python scripts/bench_summary.py bench/results --markdown-copy docs/benchmarks.md --readme README.md"


def file_date(path: str) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(path)))


def not_run(command: str) -> list[str]:
    return [f"Not run in this make bench: run `{command}`, then `{RERUN}`."]


def cell(text: Any) -> str:
    return str(text).replace("|", "\\|")


def table(header: list[str], rows: list[list[Any]], align: str = "") -> list[str]:
    """A markdown table; align: one letter a column, l or r (default: the first l, the others r)."""
    align = align or "l" + "r" * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    return out + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def render_stress(path: str) -> list[str]:
    with open(path) as fh:
        data = json.load(fh)
    config = data["config"]
    n = config["functions"]
    rows = []
    for key, store in data["stores"].items():
        final = store["final"]
        rows.append([store["label"], f"{final['live_code_objects']:,} / {n:,}",
                     f"{final['rss_bytes'] / 2**20:.1f}", f"{final['peak_rss_bytes'] / 2**20:.1f}",
                     f"{final['seconds']:.2f}", f"{final['gc_seconds']:.3f}",
                     f"{final['collector_seconds']:.3f}" if key == "coextra" else "-"])
    out = [f"`python -m coextra.stress -n {n} --waves {config['waves']}"
           f"{' --collect-every-wave' if config.get('collect_every_wave') else ''} --json` on "
           f"{file_date(path)}, CPython {config['python']} ({os.path.basename(path)}); "
           + "; ".join(f"{k}: {v}" for k, v in data.get("notes", {}).items()) + ".", "",
           "After the last wave (every function dropped by the program):", ""]
    out += table(["store", "live code objects", "RSS MiB", "peak RSS MiB", "time s", "gc s", "collector s"], rows)
    coextra_final = data["stores"].get("coextra", {}).get("final")
    if coextra_final and "live_after_reset" in coextra_final:
        out += ["", f"Control: after coextra.reset() detached every holder by hand, "
                    f"{coextra_final['live_after_reset']:,} / {n:,} code objects were still alive."]
    return out


def render_soak(path: str) -> list[str]:
    with open(path) as fh:
        data = json.load(fh)
    args = data["args"]
    command = (f"tests/soak/waves.py --minutes {args['minutes']:g} --report-every {args['report_every']:g} "
               f"--seed {args['seed']}{' --no-auto' if args.get('no_auto') else ''}")
    rows = [[f"{r['minutes']:.1f}", f"{r['waves']:,}", f"{r['holders']:,}", f"{r['map_entries']:,}",
             f"{r['dead_promised']:,} ({r['bound']:,}) / {r['dead_all']:,}", f"{r['dead_map_keys']:,}",
             f"{r['latency_median_s'] * 1e3:.0f} ms, {r['latency_p99_s'] * 1e3:.0f} ms, "
             f"{r['latency_max_s'] * 1e3:.0f} ms", f"{r['rss_mib']:.0f} MiB", f"{r['auto_share']:.1%}",
             f"{r['max_pause_s'] * 1e3:.1f} ms", f"{r.get('gc_max_s', 0.0) * 1e3:.1f} ms"]
            for r in data["reports"]]
    out = [f"`{command}` on {file_date(path)}, CPython {data['python']} ({os.path.basename(path)}):", ""]
    out += table(["minutes", "waves", "holders", "map entries",
                  "most dead holders attached after a gc.collect(): died young (bound) / all", "dead map keys",
                  "drop to free: median, p99, max", "RSS", "in automatic passes",
                  "longest automatic pause so far", "CPython's longest collection so far"], rows)
    failures = data.get("failures", [])
    out += ["", f"{data['waves']:,} waves: " + ("every check passed." if not failures else
                                                 "FAILED: " + "; ".join(failures) + ".")]
    return out


def render_conformance(path: str) -> list[str]:
    with open(path) as fh:
        text = fh.read().strip("\n")
    # run.py's page begins at "##": one level down, under this section.
    lines = [("#" + line) if line.startswith("#") else line for line in text.splitlines()]
    return [f"The page `tests/conformance/run.py --markdown` wrote ({os.path.basename(path)}), on "
            f"{file_date(path)}:", ""] + lines


def render_leakcheck(path: str) -> list[str]:
    with open(path) as fh:
        data = json.load(fh)
    rows = [[o["name"], o["status"], f"{o['seconds']:.1f} s", o["detail"] or ""] for o in data["scenarios"]]
    failed = sum(o["status"] != "PASS" for o in data["scenarios"])
    out = [f"`tests/scenarios/run.py --tool {data['tool']}`, tier {data['tier']}, on {file_date(path)}, "
           f"CPython {data['python']} ({os.path.basename(path)}):", ""]
    out += table(["scenario", "outcome", "time", "what the checker reported"], rows, "llrl")
    return out + ["", f"{len(rows) - failed} passed, {failed} failed in {data['seconds']:.1f} s."]


# The commands make bench does not run: (heading, file pattern in RESULTS_DIR, command, renderer).
EXTRAS = [
    ("The stress demo (python -m coextra.stress)", re.compile(r"stress.*\.json"),
     "PYTHONPATH=python .venv/py3.13/bin/python -m coextra.stress --json > bench/results/stress.json",
     render_stress),
    ("Soak (tests/soak/waves.py)", re.compile(r"soak.*\.json"),
     "PYTHONPATH=python .venv/py3.11/bin/python tests/soak/waves.py --minutes 40 --report-every 240 "
     "--json bench/results/soak-py3.11.json", render_soak),
    ("Conformance (tests/conformance/run.py)", re.compile(r"conformance.*\.md"),
     ".venv/py3.13/bin/python tests/conformance/run.py --selection small --jobs 2 "
     "--markdown bench/results/conformance-py3.13-small.md", render_conformance),
    ("Leak checks (tests/scenarios/run.py)", re.compile(r"leakcheck.*\.json"),
     "valgrind/run.sh 3.11 -- --tier full --json bench/results/leakcheck-valgrind-py3.11.json",
     render_leakcheck),
]
# make bench keeps these files from one run to the next (noxfile.py, session bench).
EXTRA_PREFIXES = ("stress", "soak", "conformance", "leakcheck")


def is_extra(name: str) -> bool:
    return any(pattern.fullmatch(name) for _, pattern, _, _ in EXTRAS)


def extra_sections(results: str | None) -> list[dict]:
    names = sorted(os.listdir(results)) if results else []
    sections = []
    for heading, pattern, command, render in EXTRAS:
        files = [os.path.join(results, n) for n in names if pattern.fullmatch(n)] if results else []
        lines: list[str] = []
        for path in files:
            try:
                lines += ([""] if lines else []) + render(path)
            except (ValueError, KeyError, TypeError) as error:
                lines += ([""] if lines else []) + [f"Not merged ({os.path.basename(path)}): {error!r}."]
        sections.append({"heading": heading, "files": [os.path.basename(p) for p in files],
                         "command": command, "lines": lines or not_run(command)})
    return sections


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
            shown = format_check_value(check["value"], check["passed"], check_target(check["what"]))
            out += ["", f"Check: {check['what']}: {shown} -- {'met' if check['passed'] else 'NOT met'}."]
    if not any(suite["suite"] == TORCH_SUITE for suite in summary["suites"]):
        out += ["", f"## {TORCH_SUITE}", "",
                "Not run in this make bench (it skips the script without torch in its interpreter): run "
                f"`{TORCH_COMMAND}`, then `{RERUN}`."]
    for section in summary.get("extras", []):
        out += ["", f"## {section['heading']}", "", *section["lines"]]
    if summary.get("not_merged"):
        out += ["", "Not merged (unknown format): " + ", ".join(summary["not_merged"])]
    return "\n".join(out) + "\n"


def parse_markdown(text: str) -> dict:
    """The make bench suites of a page markdown() wrote, with its figures as
    printed (ratios included, not recomputed from the rounded values)."""
    env = re.search(r"^Produced by `make bench` on (.+?): CPython (\S+), (.+)\.$", text, re.M)
    if not env:
        raise ValueError("not a page of scripts/bench_summary.py: no 'Produced by `make bench`' line")
    suites: list[dict] = []
    suite: dict | None = None
    group: dict | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            suite = {"suite": line[3:], "how": "", "groups": [], "checks": []}
            suites.append(suite)
            group = None
        elif suite is None:
            continue
        elif m := re.fullmatch(r"\*\*(.+)\*\*", line):
            group = {"title": m.group(1), "unit": "", "reference": None, "results": {}, "ratios": {}}
            suite["groups"].append(group)
        elif group is not None and (m := re.fullmatch(r"\| \| (.+) \| ratio \|", line)):
            group["unit"] = m.group(1)
        elif group is not None and (m := re.fullmatch(r"\| (.+) \| (-?[\d,.]+) \| ([\d.]+x|n/a) \|", line)):
            name = m.group(1)
            if group["unit"] == "ns" and name.startswith("`") and name.endswith("`"):
                name = name[1:-1]
            group["results"][name] = float(m.group(2).replace(",", ""))
            group["ratios"][name] = None if m.group(3) == "n/a" else float(m.group(3)[:-1])
            if group["reference"] is None and group["ratios"][name] == 1.0:
                group["reference"] = name
        elif m := re.fullmatch(r"Check: (.+): (-?[\d.]+) -- (met|NOT met)\.", line):
            suite["checks"].append({"what": m.group(1), "value": float(m.group(2)), "passed": m.group(3) == "met"})
        elif line and not suite["how"] and not suite["groups"] and not line.startswith(("|", "#", "`")):
            how = line.rstrip(".")
            if m := re.search(r"; CPython (\S+)$", how):
                suite["python"], how = m.group(1), how[:m.start()]
            suite["how"] = how
    return {"environment": {"date": env.group(1), "python": env.group(2), "machine": env.group(3)},
            "suites": [s for s in suites if s["groups"]], "not_merged": []}


# The README's results: (what, suite name contains, group title pattern (the
# largest number its first group matches, when several match), coextra's row,
# the row against it, its label, the words for coextra below / above it).
HEADLINES = [
    ("`coextra.holder(code)` from Python, net of the call", "bench_lookup", r"Lookup from Python, net of the call",
     "coextra.holder(code)", "WeakKeyDictionary.get(code)", "`WeakKeyDictionary.get`", ("faster", "slower")),
    ("`coextra.evalframe`, every frame a hit, per frame", "bench_evalframe", r"fib\(\d+\), [\d,]+ frames: per frame",
     "(c) coextra.evalframe, all hits", "(b) raw co_extra hook", "a minimal raw `co_extra` hook",
     ("faster", "slower")),
    ("C lookup with the inline `coextra_holder_of()`", "bench_evalframe", r"C-level lookup",
     "coextra_holder_of() (header inline)", "raw co_extra read", "a raw `co_extra` read", ("faster", "slower")),
    ("`coextra.collect()` over {n} live holders", "bench_collector",
     r"([\d,]+) live holders: collect\(\) against gc\.collect\(\)", "coextra.collect()", "gc.collect()",
     "`gc.collect()` on the same heap", ("faster", "slower")),
    ("longest automatic pause while attaching {n} live holders", "bench_collector",
     r"attaching ([\d,]+) live holders: the longest pause", "coextra's longest automatic pass",
     "CPython's longest collection meanwhile", "CPython's longest collection meanwhile", ("shorter", "longer")),
    ("memory of a holder with one entry (requested)", "bench_memory",
     r"Memory per cached product, product excluded \(tracemalloc\)",
     "coextra: holder + 1 entry (coextra.attach, automatic collection off)", "WeakKeyDictionary[code] = product",
     "a `WeakKeyDictionary` entry", ("smaller", "larger")),
    ("`EphemeronMap.get(k)`", "bench_ephemeron", r"Lookup `get\(k\)`, function keys, median ns per lookup",
     "EphemeronMap.get(k)", "WeakKeyDictionary.get(k)", "`WeakKeyDictionary.get`", ("faster", "slower")),
]
README_BEGIN = "<!-- bench-summary:begin -->"
README_END = "<!-- bench-summary:end -->"
UNITS = {"ns": " ns", "ms": " ms", "s": " s", "B": " B", "MiB": " MiB"}


def times(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.2f}x"


def headline_rows(summary: dict) -> list[list[str]]:
    rows = []
    suites = [suite for suite in summary["suites"] if not on_other_interpreter(suite)]
    for what, suite_part, title, ours, theirs, label, (below, above) in HEADLINES:
        found = []
        for suite in suites:
            if suite_part not in suite["suite"]:
                continue
            for group in suite["groups"]:
                m = re.fullmatch(title, group["title"])
                if m and ours in group["results"] and theirs in group["results"]:
                    n = int(m.group(1).replace(",", "")) if m.groups() else 0
                    found.append((n, group))
        if not found:
            continue
        n, group = max(found, key=lambda f: f[0])
        unit = UNITS.get(group["unit"], " " + group["unit"])
        mine, other = group["results"][ours], group["results"][theirs]
        # From a page (--from-markdown) figures and ratios are rounded: the
        # ratios are the closer for small figures, the figures for large ones.
        r_mine, r_other = group["ratios"][ours], group["ratios"][theirs]
        if min(mine, other) >= 10 or not (r_mine and r_other):
            relative = other / mine if mine > 0 else None
        else:
            relative = r_other / r_mine
        if relative is None:
            word = "n/a"
        elif relative >= 1:
            word = f"coextra {times(relative)} {below}"
        else:
            word = f"coextra {times(1 / relative)} {above}"
        rows.append([what.format(n=f"{n:,}"), f"{format_value(mine, group['unit'])}{unit}",
                     f"{label}: {format_value(other, group['unit'])}{unit}", word])
    for suite in suites:
        if "bench_collector" not in suite["suite"]:
            continue
        for check in suite.get("checks", []):
            m = re.fullmatch(r"([\d,]+) live holders attached, a small list product: time in automatic passes, "
                             r"in % of the run \(target <= ([\d.]+)\)", check["what"])
            if m:
                rows.append([f"automatic collection while attaching {m.group(1)} live holders",
                             f"{format_check_value(check['value'], check['passed'], float(m.group(2)))}% of the time",
                             f"target: at most {m.group(2)}%",
                             "met" if check["passed"] else "NOT met"])
    programs = [g for s in suites if "bench_programs" in s["suite"] for g in s["groups"]
                if "(c) coextra.evalframe, all hits" in g["results"] and "(b) raw co_extra hook" in g["results"]]
    checks = [c for s in suites if "bench_programs" in s["suite"] for c in s.get("checks", [])]
    if programs:
        ratios = [g["results"]["(c) coextra.evalframe, all hits"] / g["results"]["(b) raw co_extra hook"]
                  for g in programs]
        target = re.search(r"target <= ([\d.]+)", checks[0]["what"]) if checks else None
        rows.append([f"`coextra.evalframe` on {len(programs)} pyperformance programs, all hits: the time per run "
                     "over a minimal raw `co_extra` hook's", f"{min(ratios):.2f}x to {max(ratios):.2f}x",
                     f"target: at most {1 + float(target.group(1)) / 100:.2f}x" if target else "",
                     ("met" if all(c["passed"] for c in checks) else "NOT met") if checks else ""])
    return rows


def readme_block(summary: dict) -> str:
    env = summary["environment"]
    rows = headline_rows(summary)
    lines = [README_BEGIN,
             f"`make bench` on {env['date']}, CPython {env['python']} ({env['machine']}); every table of that "
             "run, with how each figure is measured: [docs/benchmarks.md](docs/benchmarks.md).", ""]
    lines += table(["what", "coextra", "against, in the same run", "coextra against it"], rows,
                   "lrll") if rows else ["No headline figures in that run."]
    return "\n".join(lines + [README_END])


def write_readme(path: str, summary: dict) -> None:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{path}: no {README_BEGIN} ... {README_END} block")
    text = text[:begin] + readme_block(summary) + text[end + len(README_END):]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", help="directory of per-benchmark JSON files")
    parser.add_argument("--markdown-copy", help="also write the markdown table here")
    parser.add_argument("--readme", help="rewrite the headline block of this README")
    parser.add_argument("--from-markdown", help="read the summary from this page instead (for --readme)")
    parser.add_argument("--python", help="interpreter the run used (default: the suites' own)")
    args = parser.parse_args()

    if args.from_markdown:
        with open(args.from_markdown, encoding="utf-8") as fh:
            summary = parse_markdown(fh.read())
        if args.readme:
            write_readme(args.readme, summary)
        if args.markdown_copy:
            # The page again, with this script's sections for what make bench does not run.
            summary["extras"] = extra_sections(args.results)
            with open(args.markdown_copy, "w") as fh:
                fh.write(markdown(summary))
        print(readme_block(summary))
        return 0
    if not args.results:
        parser.error("RESULTS_DIR or --from-markdown is required")

    suites: list[dict[str, Any]] = []
    not_merged: list[str] = []
    merged_paths: list[str] = []
    for entry in sorted(os.listdir(args.results), key=merge_order):
        if entry.endswith(".json") and not entry.startswith("summary") and not is_extra(entry):
            path = os.path.join(args.results, entry)
            try:
                suite = with_ratios(load(path))
                if m := OTHER_INTERPRETER_FILE.fullmatch(entry):
                    suite["suite"] += f" on CPython {m.group(2)}"
                suites.append(suite)
                merged_paths.append(path)
            except (ValueError, KeyError, TypeError) as error:
                print(f"not merged: {error}", file=sys.stderr)
                not_merged.append(entry)
    if not suites:
        print(f"no benchmark results in {args.results}: run make bench, or add the results of the other "
              f"commands to the page as it is with --from-markdown docs/benchmarks.md --markdown-copy "
              f"docs/benchmarks.md", file=sys.stderr)
        return 1
    pythons = [s["python"] for s in suites if "python" in s and not on_other_interpreter(s)]
    python = args.python or (max(set(pythons), key=pythons.count) if pythons else platform.python_version())
    # The run's date is its files', so that merging again later (a soak's
    # results added) keeps it.
    newest = max(os.path.getmtime(p) for p in merged_paths)
    summary = {
        "environment": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(newest)), "python": python,
                        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}"},
        "suites": suites,
        "extras": extra_sections(args.results),
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
    if args.readme:
        write_readme(args.readme, summary)
    print(text)
    return 1 if not_merged else 0


if __name__ == "__main__":
    sys.exit(main())
