"""The soak (tests/soak/waves.py: generated code in waves, cached three ways,
automatic collection alone) for a short while, and its twin with automatic
collection off, whose checks must fail: they are real checks."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from conftest import subprocess_env

SOAK = pathlib.Path(__file__).resolve().parents[1] / "soak" / "waves.py"


def soak(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SOAK), *args], capture_output=True, text=True,
                          env=subprocess_env(), timeout=600)


def test_a_short_soak_keeps_every_check():
    run = soak("--minutes", "0.25", "--report-every", "5", "--seed", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "every check passed" in run.stdout
    rows = [line for line in run.stdout.splitlines() if line.startswith("| 0.")]
    assert len(rows) >= 2, run.stdout


def test_without_automatic_collection_the_soak_fails_its_bound():
    run = soak("--minutes", "0.1", "--report-every", "5", "--seed", "1", "--no-auto",
               "--max-latency", "5")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "dead caches that died young attached after gc.collect()" in run.stdout
    assert "still alive" in run.stdout
