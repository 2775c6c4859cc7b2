"""scripts/bench_summary.py: how `make bench` merges results into ratios and a table."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = os.path.join(REPO, "scripts", "bench_summary.py")


def run_summary(tmp_path, files: dict) -> tuple[dict, str]:
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    copy = tmp_path / "copy.md"
    subprocess.run([sys.executable, SCRIPT, str(tmp_path), "--markdown-copy", str(copy)],
                   check=True, capture_output=True, text=True)
    summary = json.loads((tmp_path / "summary.json").read_text())
    markdown = (tmp_path / "summary.md").read_text()
    assert copy.read_text() == markdown
    return summary, markdown


def test_google_benchmark_groups_by_prefix_with_the_first_as_reference(tmp_path):
    def run(name, aggregate, cpu):
        return {"name": f"{name}_{aggregate}", "run_name": name, "run_type": "aggregate",
                "aggregate_name": aggregate, "cpu_time": cpu, "real_time": cpu * 2, "time_unit": "ns"}

    gbench = {"context": {"num_cpus": 2, "mhz_per_cpu": 2000}, "benchmarks": [
        run("Lookup/raw", "mean", 9.0), run("Lookup/raw", "median", 2.0),
        run("Lookup/ours", "median", 3.0), run("Add/dict", "median", 10.0),
        run("Add/ours", "median", 5.0)]}
    summary, markdown = run_summary(tmp_path, {"bench_x.json": gbench})
    groups = {g["title"]: g for g in summary["suites"][0]["groups"]}
    lookup = groups["Lookup (C++, bench_x)"]
    assert lookup["reference"] == "raw"
    assert lookup["results"] == {"raw": 2.0, "ours": 3.0}, "the median, CPU time"
    assert lookup["ratios"] == {"raw": 1.0, "ours": 1.5}
    assert groups["Add (C++, bench_x)"]["ratios"]["ours"] == 0.5
    assert "| `ours` | 3.0 | 1.50x |" in markdown


def test_summary_format_files_keep_their_groups_and_checks(tmp_path):
    suite = {"suite": "Memory", "python": "3.x", "how": "measured",
             "groups": [{"title": "Bytes", "unit": "B", "reference": "a", "results": {"a": 100.0, "b": 250.0}}],
             "checks": [{"what": "a <= 160 B", "value": 100.0, "passed": True}]}
    summary, markdown = run_summary(tmp_path, {"mem.json": suite})
    assert summary["suites"][0]["groups"][0]["ratios"] == {"a": 1.0, "b": 2.5}
    assert "| b | 250.0 | 2.50x |" in markdown
    assert "Check: a <= 160 B: 100.0 -- met." in markdown


def test_an_unknown_json_file_is_listed_and_fails_the_run(tmp_path):
    good = {"suite": "S", "groups": [{"title": "T", "unit": "ns", "reference": "a", "results": {"a": 1.0}}]}
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "odd.json").write_text(json.dumps({"something": 1}))
    run = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 1
    assert "neither the summary format" in run.stderr
    assert "Not merged (unknown format): odd.json" in (tmp_path / "summary.md").read_text()


def test_a_pyperf_suite_is_one_group_with_its_first_benchmark_as_reference(tmp_path):
    pyperf = pytest.importorskip("pyperf")
    suite = pyperf.BenchmarkSuite([
        pyperf.Benchmark([pyperf.Run([2e-9, 2e-9, 2e-9], metadata={"name": "ours", "loops": 1})]),
        pyperf.Benchmark([pyperf.Run([6e-9, 6e-9, 6e-9], metadata={"name": "theirs", "loops": 1})]),
    ])
    suite.dump(str(tmp_path / "perf.json"))
    summary, _ = run_summary(tmp_path, {})
    group = summary["suites"][0]["groups"][0]
    assert group["reference"] == "ours"
    assert group["ratios"] == pytest.approx({"ours": 1.0, "theirs": 3.0})
