"""Every leak harness fails on the leaks planted for it, for the right reason.

A harness that never fails proves nothing. Each planted leak (tests/scenarios/planted/,
tests/refleak/planted/) is run through its harness exactly as `make test` and
`make leakcheck` run the real scenarios, and the harness must report it:

- valgrind (tests/scenarios/run.py --tool valgrind) on the interpreter running
  this file: the naive twin and an injected reference leak as definitely lost
  blocks, a read of freed memory as an invalid read;
- refleak (scripts/refleak.sh, debug interpreter): the naive twin and an injected
  reference leak as references and blocks that grow on every run;
- ASan/LSan (tests/scenarios/run.py --tool asan), in `make leakcheck` only (after
  nox -s asan has built build/asan-py3.X): the leaks as LeakSanitizer
  reports, the read as heap-use-after-free.

Run with the interpreter under test: python -m pytest tests/leakcheck
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERSION = "%d.%d" % sys.version_info[:2]
RUNNER = os.path.join(REPO, "tests", "scenarios", "run.py")
ASAN_PACKAGE = os.path.join(REPO, "build", f"asan-py{VERSION}", "python")


def run(command: list[str], env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else dict(os.environ))


def run_scenario(tool: str, name: str, *extra: str) -> subprocess.CompletedProcess:
    return run([sys.executable, RUNNER, "--tool", tool, "--python", sys.executable, *extra, name])


def assert_caught(proc: subprocess.CompletedProcess, name: str, *reasons: str) -> None:
    """The harness failed, on this scenario, and said why."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, f"the harness did not fail (exit {proc.returncode}):\n{out}"
    line = next((l for l in proc.stdout.splitlines() if l.startswith(f"FAIL  {name} ")), None)
    assert line is not None, f"{name} is not reported as FAIL:\n{out}"
    for reason in reasons:
        assert reason in line, f"{name} failed, but not with {reason!r}:\n{line}"


# --- valgrind --------------------------------------------------------------------

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")


@needs_valgrind
@pytest.mark.parametrize(
    "name, reasons",
    [
        pytest.param("planted-naive-twin", ["definitely lost: ", "indirectly lost: "],
                     marks=pytest.mark.xfail(sys.version_info >= (3, 14), strict=True,
                                             reason="3.14+: its blocks are only possibly lost "
                                                    "(docs/leak-checks.md)")),
        ("planted-leaked-reference", ["definitely lost: "]),
        ("planted-use-after-free", ["invalid read"]),
    ],
)
def test_valgrind_catches(name, reasons):
    assert_caught(run_scenario("valgrind", name), name, *reasons)


@needs_valgrind
def test_valgrind_checks_the_interpreter_a_script_starts(tmp_path):
    # .venv/py3.14/bin/python of scripts/sid-root.sh is such a script.
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    name = "planted-leaked-reference"
    proc = run([sys.executable, RUNNER, "--tool", "valgrind", "--python", str(wrapper), name])
    assert_caught(proc, name, "definitely lost: ")


# --- refleak on the debug interpreter --------------------------------------------------

DEBUG_PYTHON = os.path.join(REPO, ".venv", "dbg", "bin", "python")


@pytest.mark.skipif(not os.path.exists(DEBUG_PYTHON), reason="no debug interpreter in .venv/dbg")
def test_refleak_catches_the_naive_twin_and_an_injected_reference_leak():
    env = dict(os.environ, COEXTRA_PLANTED_LEAKS="1")
    proc = run([os.path.join(REPO, "scripts", "refleak.sh"), "tests/refleak/planted"], env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    leaks = [l for l in proc.stdout.splitlines() if l.startswith("LEAK ")]
    assert len(leaks) == 2, out
    assert "test_naive_twin_leaks_products_that_reference_their_code leaked [" in leaks[0], out
    assert "test_injected_reference_leak leaked [" in leaks[1], out
    assert all("references" in l and "memory blocks" in l for l in leaks), out
    assert "2 passed" in proc.stdout, "the planted tests themselves pass: only the harness fails"


def test_planted_refleak_tests_skip_unless_selected_explicitly():
    env = {k: v for k, v in os.environ.items() if k != "COEXTRA_PLANTED_LEAKS"}
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    proc = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "tests/refleak/planted"], env=env)
    # The module skips itself: nothing runs (pytest's exit status 5, no tests ran).
    assert proc.returncode == 5 and "1 skipped" in proc.stdout, proc.stdout + proc.stderr


# --- AddressSanitizer / LeakSanitizer -----------------------------------------------

# `make leakcheck` (the planted_leaks_asan session) sets COEXTRA_LEAKCHECK_ASAN=1 after the asan session
# has (re)built build/asan-py3.X, so a stale sanitized build is never what is tested.
needs_asan_build = pytest.mark.skipif(
    os.environ.get("COEXTRA_LEAKCHECK_ASAN") != "1" or not os.path.isdir(ASAN_PACKAGE),
    reason=f"ASan checks run in `make leakcheck` (nox -s asan builds build/asan-py{VERSION})",
)


@needs_asan_build
@pytest.mark.parametrize(
    "name, reasons",
    [
        ("planted-naive-twin", ["ERROR: LeakSanitizer: detected memory leaks"]),
        ("planted-leaked-reference", ["ERROR: LeakSanitizer: detected memory leaks"]),
        ("planted-use-after-free", ["ERROR: AddressSanitizer: heap-use-after-free"]),
    ],
)
def test_asan_catches(name, reasons):
    assert_caught(run_scenario("asan", name, "--pythonpath", ASAN_PACKAGE), name, *reasons)
