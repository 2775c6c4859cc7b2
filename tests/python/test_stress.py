"""The stress demo (python -m coextra.stress) at a small size: its JSON, its verdicts, its plot."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import subprocess_env

import coextra
from coextra.stress import _memory, _svg

FUNCTIONS = 200
WAVES = 2
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    plot = tmp_path_factory.mktemp("stress") / "stress.svg"
    run = subprocess.run(
        [sys.executable, "-m", "coextra.stress", "-n", str(FUNCTIONS), "--waves", str(WAVES),
         "--json", "--plot", str(plot)],
        capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout), plot, run.stderr


def test_json_reports_every_store_for_every_wave(demo):
    result, _, _ = demo
    assert result["config"]["functions"] == FUNCTIONS
    assert result["config"]["waves"] == WAVES
    assert set(result["notes"]) == {"compilation", "collector"}
    assert list(result["stores"]) == ["naive", "weakkeydict", "coextra"]
    for store in result["stores"].values():
        waves = store["waves"]
        assert [w["wave"] for w in waves] == list(range(WAVES + 1)), "wave 0 is the baseline"
        assert waves[-1]["compiled"] == FUNCTIONS
        for record in waves:
            for key in ("live_code_objects", "rss_bytes", "peak_rss_bytes", "seconds",
                        "gc_seconds", "collector_seconds"):
                assert key in record
        assert store["final"]["products_compiled"] == FUNCTIONS, "every function was compiled once"


def test_naive_and_weakkeydict_stores_leak_every_code_object(demo):
    result, _, _ = demo
    # Both controls must leak, or the demo proves nothing about coextra.
    assert result["stores"]["naive"]["final"]["live_code_objects"] == FUNCTIONS
    assert result["stores"]["weakkeydict"]["final"]["live_code_objects"] == FUNCTIONS
    assert [w["live_code_objects"] for w in result["stores"]["naive"]["waves"]] == [
        FUNCTIONS * w // WAVES for w in range(WAVES + 1)]


def test_only_their_own_caches_keep_the_code_objects_alive(demo):
    # Detaching every holder by hand frees them all: the workload has no other
    # root, so the comparison between the stores is about the stores only.
    result, _, _ = demo
    assert result["stores"]["coextra"]["final"]["live_after_reset"] == 0


def test_automatic_collection_alone_frees_every_code_object(demo):
    result, _, stderr = demo
    assert "automatic collection only" in stderr
    assert result["stores"]["coextra"]["final"]["live_code_objects"] == 0


def test_compilation_goes_through_the_evalframe_backend(demo):
    result, _, stderr = demo
    assert "through the evalframe backend" in stderr
    stores = result["stores"]
    for store in stores.values():
        assert store["final"]["products_compiled"] == FUNCTIONS
    # coextra's products were stored by the backend itself; each function ran twice.
    assert stores["coextra"]["final"]["evalframe_stats"]["stored"] == FUNCTIONS
    assert stores["coextra"]["final"]["evalframe_stats"]["hits"] >= FUNCTIONS


def test_collect_every_wave_adds_explicit_passes():
    run = subprocess.run(
        [sys.executable, "-m", "coextra.stress", "-n", "120", "--waves", "2", "--stores", "coextra",
         "--collect-every-wave", "--json"],
        capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert run.returncode == 0, run.stderr
    assert "coextra.collect() after gc.collect() in every wave" in run.stderr
    final = json.loads(run.stdout)["stores"]["coextra"]["final"]
    assert final["live_code_objects"] == 0


def test_plot_is_an_svg_with_both_panels_and_every_store(demo):
    result, plot, _ = demo
    root = ET.parse(plot).getroot()  # raises on malformed XML
    assert root.tag == SVG + "svg"
    panels = root.findall(f"{SVG}g[@class='panel']")
    assert [p.get("data-title") for p in panels] == ["Code objects still alive", "Resident memory (RSS)"]
    labels = [store["label"] for store in result["stores"].values()]
    for panel in panels:
        series = panel.findall(f"{SVG}g[@class='series']")
        assert [s.get("data-name") for s in series] == labels
        for s in series:
            points = s.find(f"{SVG}polyline").get("points").split()
            assert len(points) == WAVES + 1
    legend = root.find(f"{SVG}g[@class='legend']")
    assert [t.text for t in legend.findall(f"{SVG}text")] == labels


def test_unknown_store_is_refused():
    run = subprocess.run([sys.executable, "-m", "coextra.stress", "--stores", "naive,bogus"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=60)
    assert run.returncode == 2
    assert "bogus" in run.stderr


def test_nice_ticks_cover_the_range_with_round_steps():
    ticks = _svg.nice_ticks(0, 10_000)
    assert ticks[0] <= 0 and ticks[-1] >= 10_000
    steps = {round(b - a, 6) for a, b in zip(ticks, ticks[1:])}
    assert steps == {2000.0}
    assert _svg.nice_ticks(0, 0)[-1] > 0, "an all-zero series still gets an axis"
    for high in (68.4, 99.9, 100, 1, 12_345):
        assert _svg.nice_ticks(0, high)[-1] >= high, f"the axis must reach {high}"


def test_rss_figures_are_plausible():
    rss, peak = _memory.rss_bytes(), _memory.peak_rss_bytes()
    assert rss is not None and rss > 1 << 20
    assert peak is not None and peak >= rss
    before = _memory.rss_bytes()
    block = bytearray(64 << 20)  # touched pages: RSS must see them
    assert _memory.rss_bytes() - before > 32 << 20
    del block


def test_stress_is_importable_as_a_console_script_entry_point():
    from coextra import stress

    assert callable(stress.main)
    assert coextra.stats()["holders"] == 0, "importing the demo attaches nothing"


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_progress_is_a_bar_on_a_terminal_and_plain_lines_otherwise():
    from coextra.stress import Progress

    record = {"wave": 2, "live_code_objects": 10, "rss_bytes": 3 << 20}
    tty, plain = _Stream(True), _Stream(False)
    for stream in (tty, plain):
        progress = Progress(stream, total_waves=4)
        progress.update("naive", {**record, "wave": 0})
        progress.update("naive", record)
    assert tty.text.startswith("\r") and "\n" not in tty.text, "a bar redraws one line"
    assert "[###############---------------]   2/4 waves" in tty.text
    assert "\r" not in plain.text and "[#" not in plain.text
    assert plain.text == "  naive: wave 2/4: live code objects 10, RSS 3.0 MiB\n", "no line for the baseline"
