"""The reproducers of tests/conformance/: each effect of effects.py that has one
shows with coextra, shows without it (a foreign co_extra user, or CPython's own
minimal frame evaluator), and does not show with neither."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

CONFORMANCE = os.path.join(REPO, "tests", "conformance")
sys.path.insert(0, CONFORMANCE)
import effects  # noqa: E402

VERSION = "%d.%d" % sys.version_info[:2]


def run_reproducer(name: str, mode: str, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, os.path.join(CONFORMANCE, name), mode], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.path.join(REPO, "python"), **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def effect(name: str) -> effects.Effect:
    return next(e for e in effects.EFFECTS if e.name == name)


@pytest.mark.skipif(VERSION not in effect("co_extra-not-stateless").versions,
                    reason="CPython 3.14+: _PyCode_VerifyStateless")
@pytest.mark.parametrize("mode, expected", [
    ("none", "stateless: yes"),
    ("reference", "stateless: yes"),
    ("co_extra", "stateless: no (only basic code objects are supported)"),
    ("coextra", "stateless: no (only basic code objects are supported)"),
])
def test_co_extra_makes_code_not_stateless(mode, expected):
    assert run_reproducer("repro_co_extra_not_stateless.py", mode).strip() == expected


def _jit_available() -> bool:
    jit = getattr(sys, "_jit", None)
    return jit is not None and jit.is_available()


@pytest.mark.skipif(VERSION not in effect("jit-calls-not-inlined").versions or not _jit_available(),
                    reason="CPython 3.14+ built with its JIT")
@pytest.mark.parametrize("mode, callee", [("none", "yes"), ("reference", "no"), ("coextra", "no")])
def test_jit_does_not_inline_calls_under_a_frame_evaluator(mode, callee):
    out = run_reproducer("repro_jit_calls_not_inlined.py", mode, PYTHON_JIT="1")
    assert out.splitlines() == [f"callee ran as JIT code: {callee}", "loop ran as JIT code: yes"]
