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


def test_a_missed_target_never_prints_as_the_target_itself(tmp_path):
    suite = {"suite": "bench_collector.py", "python": "3.x", "how": "measured", "groups": [],
             "checks": [{"what": "100,000 live holders attached, a small list product: time in automatic "
                                 "passes, in % of the run (target <= 5)", "value": 5.0371, "passed": False},
                        {"what": "other (target <= 5)", "value": 4.96, "passed": True},
                        {"what": "no target", "value": 5.0371, "passed": False}]}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "collector.json").write_text(json.dumps(suite))
    readme = tmp_path / "README.md"
    readme.write_text("<!-- bench-summary:begin -->\n<!-- bench-summary:end -->\n")
    subprocess.run([sys.executable, SCRIPT, str(tmp_path / "results"), "--readme", str(readme)],
                   check=True, capture_output=True, text=True)
    markdown = (tmp_path / "results" / "summary.md").read_text()
    assert "(target <= 5): 5.04 -- NOT met." in markdown
    assert "other (target <= 5): 5.0 -- met." in markdown, "one decimal while it says the truth"
    assert "no target: 5.0 -- NOT met." in markdown
    assert "| 5.04% of the time | target: at most 5% | NOT met |" in readme.read_text()


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


def test_the_results_of_commands_make_bench_does_not_run_get_a_section_or_the_command(tmp_path):
    good = {"suite": "S", "groups": [{"title": "T", "unit": "ns", "reference": "a", "results": {"a": 1.0}}]}
    soak = {"python": "3.11.7", "args": {"minutes": 1.0, "report_every": 60.0, "seed": 0, "no_auto": False},
            "waves": 120, "failures": [],
            "reports": [{"minutes": 1.0, "waves": 120, "holders": 3_000, "map_entries": 1_500, "dead_promised": 0,
                         "dead_all": 40, "bound": 2_000, "dead_map_keys": 10, "latency_median_s": 0.2,
                         "latency_p99_s": 1.5, "latency_max_s": 2.0, "rss_mib": 99.0, "auto_share": 0.07,
                         "max_pause_s": 0.05, "gc_max_s": 0.3}]}
    conformance = "## CPython 3.11.7, selection small\n\n| module | tests |\n|---|---:|\n| test_gc | 48 |\n"
    _, markdown = run_summary(tmp_path, {"good.json": good, "soak-py3.11.json": soak})
    assert "## Soak (tests/soak/waves.py)" in markdown
    assert "`tests/soak/waves.py --minutes 1 --report-every 60 --seed 0` on " in markdown
    assert "| 0 (2,000) / 40 |" in markdown and "120 waves: every check passed." in markdown
    assert "## The stress demo (python -m coextra.stress)\n\nNot run in this make bench: run `" in markdown
    assert "## Conformance (tests/conformance/run.py)\n\nNot run in this make bench: run `" in markdown
    assert "## Pauses under torch.compile (bench_torch_pauses.py)\n\nNot run in this make bench" in markdown
    (tmp_path / "conformance-py3.11-small.md").write_text(conformance)
    _, markdown = run_summary(tmp_path, {})
    assert "### CPython 3.11.7, selection small" in markdown and "| test_gc | 48 |" in markdown


def test_bench_torch_pauses_results_are_a_suite(tmp_path):
    torch = {"python": "3.11.7", "torch": "2.13", "waves": 12, "per_wave": 10, "seconds": 20.0, "coextra_s": 0.025,
             "gc_s": 0.2, "auto_share": 0.05, "largest_pass_nodes": 1, "dead_attached": 0, "dropped": 90,
             "map_entries": 30}
    summary, markdown = run_summary(tmp_path, {"bench_torch_pauses.json": torch})
    [suite] = summary["suites"]
    assert suite["groups"][0]["ratios"]["coextra's longest automatic pause"] == pytest.approx(0.125)
    assert markdown.count("## Pauses under torch.compile (bench_torch_pauses.py)") == 1
    assert "Not run in this make bench (it skips" not in markdown


def test_the_readme_block_is_written_from_the_same_run_and_read_back_from_the_page(tmp_path):
    lookup = {"suite": "Python lookup (bench_lookup.py)", "python": "3.13.0", "how": "timeit",
              "groups": [{"title": "Lookup from Python, net of the call", "unit": "ns",
                          "reference": "coextra.holder(code)",
                          "results": {"coextra.holder(code)": 20.0, "WeakKeyDictionary.get(code)": 320.0}}]}
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\nbefore\n<!-- bench-summary:begin -->\nold 1 ms\n<!-- bench-summary:end -->\nafter\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench_lookup.json").write_text(json.dumps(lookup))
    subprocess.run([sys.executable, SCRIPT, str(tmp_path / "results"), "--readme", str(readme)],
                   check=True, capture_output=True, text=True)
    text = readme.read_text()
    assert "old 1 ms" not in text and text.startswith("# x\n\nbefore\n<!-- bench-summary:begin -->\n")
    assert text.endswith("<!-- bench-summary:end -->\nafter\n")
    row = ("| `coextra.holder(code)` from Python, net of the call | 20.0 ns | `WeakKeyDictionary.get`: 320.0 ns "
           "| coextra 16x faster |")
    assert row in text and "`make bench` on " in text and "CPython 3.13.0" in text
    # The page the same run wrote gives the same block.
    block = text[text.index("<!-- bench-summary:begin -->"):text.index("after")]
    readme.write_text("<!-- bench-summary:begin -->\n<!-- bench-summary:end -->\nafter\n")
    subprocess.run([sys.executable, SCRIPT, "--from-markdown", str(tmp_path / "results" / "summary.md"),
                    "--readme", str(readme)], check=True, capture_output=True, text=True)
    assert readme.read_text() == block + "after\n"


def test_a_suite_run_on_another_interpreter_follows_its_own_and_stays_out_of_the_readme(tmp_path):
    def ephemeron(python, get_ns):
        return {"suite": "EphemeronMap (bench_ephemeron.py)", "python": python, "how": "timeit",
                "groups": [{"title": "Lookup `get(k)`, function keys, median ns per lookup", "unit": "ns",
                            "reference": "EphemeronMap.get(k)",
                            "results": {"EphemeronMap.get(k)": get_ns, "WeakKeyDictionary.get(k)": 200.0}}],
                "checks": [{"what": "get(k) >= 3x", "value": 200.0 / get_ns, "passed": True}]}

    files = {"bench_ephemeron.json": ephemeron("3.15.2", 20.0), "bench_ephemeron-py3.11.json": ephemeron("3.11.7", 40.0),
             "bench_ephemeron-py3.13.json": ephemeron("3.13.5", 25.0)}
    readme = tmp_path / "README.md"
    readme.write_text("<!-- bench-summary:begin -->\n<!-- bench-summary:end -->\n")
    (tmp_path / "results").mkdir()
    for name, data in files.items():
        (tmp_path / "results" / name).write_text(json.dumps(data))
    subprocess.run([sys.executable, SCRIPT, str(tmp_path / "results"), "--readme", str(readme)],
                   check=True, capture_output=True, text=True)
    summary = json.loads((tmp_path / "results" / "summary.json").read_text())
    assert [suite["suite"] for suite in summary["suites"]] == [
        "EphemeronMap (bench_ephemeron.py)", "EphemeronMap (bench_ephemeron.py) on CPython 3.11",
        "EphemeronMap (bench_ephemeron.py) on CPython 3.13"]
    assert summary["environment"]["python"] == "3.15.2", "the run's interpreter, not the others'"
    markdown = (tmp_path / "results" / "summary.md").read_text()
    assert "## EphemeronMap (bench_ephemeron.py) on CPython 3.11\n\nTimeit; CPython 3.11.7." in markdown
    assert markdown.count("Check: get(k) >= 3x:") == 3
    block = readme.read_text()
    assert "20.0 ns" in block and "40.0 ns" not in block and "25.0 ns" not in block
    # Read back from the page, the block is the same.
    readme.write_text("<!-- bench-summary:begin -->\n<!-- bench-summary:end -->\n")
    subprocess.run([sys.executable, SCRIPT, "--from-markdown", str(tmp_path / "results" / "summary.md"),
                    "--readme", str(readme)], check=True, capture_output=True, text=True)
    assert readme.read_text() == block


def test_the_page_in_the_repository_reads_back_as_it_was_written():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import bench_summary
    finally:
        sys.path.pop(0)
    with open(os.path.join(REPO, "docs", "benchmarks.md"), encoding="utf-8") as fh:
        page = fh.read()
    summary = bench_summary.parse_markdown(page)
    assert summary["suites"], "the page has make bench's suites"
    again = bench_summary.markdown({**summary, "extras": bench_summary.extra_sections(None)})
    suites_part = lambda text: text[:text.index("\n## " + bench_summary.TORCH_SUITE)]  # noqa: E731
    if "\n## " + bench_summary.TORCH_SUITE not in page:
        page = page.rstrip("\n") + "\n\n## " + bench_summary.TORCH_SUITE + "\n"
    assert suites_part(again) == suites_part(page)


def test_make_bench_keeps_exactly_the_files_of_the_commands_it_does_not_run():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import bench_summary
    finally:
        sys.path.pop(0)
    for _, pattern, command, _ in bench_summary.EXTRAS:
        assert any(pattern.pattern.startswith(prefix) for prefix in bench_summary.EXTRA_PREFIXES), pattern
        assert "bench/results/" in command
    with open(os.path.join(REPO, "noxfile.py"), encoding="utf-8") as fh:
        noxfile = fh.read()
    prefixes = ", ".join(f'"{prefix}"' for prefix in bench_summary.EXTRA_PREFIXES)
    assert f"startswith(({prefixes}))" in noxfile, "noxfile.py's bench session keeps the same files"
