"""Shared fixtures. Every test runs against a clean registry and must leave no
holder, no entry and no ephemeron map entry behind (the greenlet rule: every
test checks for leaks)."""

from __future__ import annotations

import gc
import os
import sys

import pytest

import coextra

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_function(source: str = "def f(x):\n    return x + 1\n", name: str = "f"):
    """A function compiled at run time (its code object is new and collectable)."""
    namespace: dict = {}
    exec(compile(source, f"<generated {name}>", "exec"), namespace)
    return namespace[name]


def alive_counts() -> tuple[int, int, int]:
    gc.collect()
    s = coextra.stats()
    return s["holders_alive"], s["entries_alive"], s["ephemeron_entries_alive"]


@pytest.fixture(autouse=True)
def no_leaked_holders_or_entries():
    coextra.reset()
    before = alive_counts()
    yield
    coextra.reset()
    after = alive_counts()
    assert after == before, f"holders/entries/ephemeron entries alive before {before}, after {after}"


def _auto_collect_set_for_the_test(enabled: bool):
    before = coextra.get_auto_collect()
    coextra.set_auto_collect(enabled)
    yield
    coextra.set_auto_collect(before)


@pytest.fixture
def explicit_collection_only():
    """Automatic collection off: the test proves what collect() does."""
    yield from _auto_collect_set_for_the_test(False)


@pytest.fixture
def automatic_collection_on():
    """Automatic collection on, whatever the test before left."""
    yield from _auto_collect_set_for_the_test(True)


@pytest.fixture
def evalframe_off_afterwards():
    """For the evalframe tests: zeroed counters, and the backend off afterwards."""
    from coextra import evalframe

    evalframe.reset_stats()
    yield
    evalframe.disable()
    evalframe.reset_stats()


def subprocess_env() -> dict:
    """Environment for a child interpreter that imports this checkout's coextra."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "coextra"))]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    return env


def in_child(body) -> int:
    """Runs body() in a forked child; its exit status (0: body returned True)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if body() else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """The sdist and the wheel of this tree, built once (distributions.py)."""
    from distributions import build_distributions

    return build_distributions(tmp_path_factory.mktemp("dist"))
