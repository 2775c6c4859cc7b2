"""The stress demo (python -m coextra.stress) at a small size: its JSON, its verdicts, its plot."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import subprocess_env

import coextra
from coextra.stress import _memory

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
    pytest.importorskip("matplotlib")  # the extra coextra[plot]; requirements-dev.txt installs it
    result, plot, _ = demo
    root = ET.parse(plot).getroot()  # raises on malformed XML
    assert root.tag == SVG + "svg"
    text = " ".join(t for t in root.itertext())
    for title in ("Code objects still alive", "Resident memory (RSS)"):
        assert title in text
    for store in result["stores"].values():
        assert text.count(store["label"]) >= 2, "a legend entry in each panel"
    # One polyline of WAVES + 1 points per store and panel (legend samples have 2 points).
    lines = [p for p in root.iter(SVG + "path") if (p.get("d") or "").count("L") == WAVES
             and "stroke:" in (p.get("style") or "") and "fill: none" in (p.get("style") or "")]
    assert len(lines) >= 2 * len(result["stores"]), "a line of every store in both panels"


def test_without_matplotlib_the_demo_says_so_and_keeps_the_table(tmp_path):
    (tmp_path / "matplotlib.py").write_text("raise ImportError('hidden for this test')\n")
    env = subprocess_env()
    env["PYTHONPATH"] = str(tmp_path) + ":" + env["PYTHONPATH"]
    run = subprocess.run(
        [sys.executable, "-m", "coextra.stress", "-n", "60", "--waves", "2", "--stores", "coextra",
         "--plot", str(tmp_path / "plot.svg")],
        capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "no plot: matplotlib is not installed" in run.stdout
    assert "live code objects" in run.stdout and not (tmp_path / "plot.svg").exists()


def test_unknown_store_is_refused():
    run = subprocess.run([sys.executable, "-m", "coextra.stress", "--stores", "naive,bogus"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=60)
    assert run.returncode == 2
    assert "bogus" in run.stderr


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
    pytest.importorskip("tqdm")  # the extra coextra[demo]; requirements-dev.txt installs it
    from coextra.stress import Progress

    record = {"wave": 2, "live_code_objects": 10, "rss_bytes": 3 << 20}
    tty, plain = _Stream(True), _Stream(False)
    for stream in (tty, plain):
        progress = Progress(stream, total_waves=4)
        progress.update("naive", {**record, "wave": 0})
        progress.update("naive", record)
    assert "\r" in tty.text and "2/4" in tty.text and "live code objects 10" in tty.text
    assert "\r" not in plain.text
    assert plain.text == "  naive: wave 2/4: live code objects 10, RSS 3.0 MiB\n", "no line for the baseline"
