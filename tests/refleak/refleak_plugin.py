"""Refleak hunting for pytest, the way CPython's `regrtest -R` does it.

Load it with `-p refleak_plugin` on a debug interpreter (one with
sys.gettotalrefcount, e.g. Debian's python3.11-dbg; scripts/refleak.sh does all of
this). Every test then runs WARMUP + RUNS times: the warm-up runs fill caches
(interned strings, type caches, lazily imported modules), and after each of the
RUNS measured runs the plugin records how much sys.gettotalrefcount() and
sys.getallocatedblocks() grew. A test whose references, or whose allocated
blocks, grew on *every* measured run leaks, as in regrtest; one that stays flat or
shrinks even once does not (allocation noise is rarely monotonic).

The repetitions are run unlogged (their reports are dropped, so pytest's own
bookkeeping does not grow with them); then the test runs once more, normally, and
is reported as usual. Leaking tests are listed at the end and make the session
fail (exit status 1).

    --refleak-runs N      measured runs per test (default 3)
    --refleak-warmup N    warm-up runs per test (default 3)
"""

from __future__ import annotations

import gc
import linecache
import re
import sys
from dataclasses import dataclass, field

import pytest
from _pytest.runner import runtestprotocol

LEAKS_KEY = pytest.StashKey[list]()


@dataclass
class Leak:
    nodeid: str
    refs: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)

    def describe(self) -> str:
        parts = []
        if grows_every_time(self.refs):
            parts.append(f"leaked {self.refs} references, sum={sum(self.refs)}")
        if grows_every_time(self.blocks):
            parts.append(f"leaked {self.blocks} memory blocks, sum={sum(self.blocks)}")
        return f"{self.nodeid} " + " and ".join(parts)


def grows_every_time(deltas: list[int]) -> bool:
    """regrtest's rule: a leak is growth on every measured run."""
    return bool(deltas) and all(d >= 1 for d in deltas)


def pytest_addoption(parser):
    group = parser.getgroup("refleak", "reference leak hunting (debug interpreter)")
    group.addoption("--refleak-runs", type=int, default=3, help="measured runs per test")
    group.addoption("--refleak-warmup", type=int, default=3, help="warm-up runs per test")


def pytest_configure(config):
    if not hasattr(sys, "gettotalrefcount"):
        raise pytest.UsageError(
            "refleak hunting needs a debug build of CPython (sys.gettotalrefcount), "
            "e.g. python3.11-dbg; see scripts/refleak.sh"
        )
    if config.getoption("--refleak-runs") < 1:
        raise pytest.UsageError("--refleak-runs must be at least 1")
    config.stash[LEAKS_KEY] = []
    _deterministic_hypothesis()


def _deterministic_hypothesis() -> None:
    """The same examples on every run, and no example database that grows."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("refleak", derandomize=True, database=None, print_blob=False)
    settings.load_profile("refleak")


def _clear_caches() -> None:
    """Caches that legitimately grow between runs (a subset of regrtest's)."""
    re.purge()
    linecache.clearcache()
    sys._clear_type_cache()
    gc.collect()


def _counts() -> tuple[int, int]:
    _clear_caches()
    return sys.gettotalrefcount(), sys.getallocatedblocks()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    config = item.config
    warmup = config.getoption("--refleak-warmup")
    runs = config.getoption("--refleak-runs")
    # Preallocated, and only rebinding of locals in the loop, so that the
    # bookkeeping itself neither takes references nor allocates (as in regrtest).
    leak = Leak(item.nodeid, [0] * runs, [0] * runs)
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    refs, blocks = _counts()
    for i in range(warmup + runs):
        # nextitem=None tears down every fixture after each run, so a repetition
        # starts from where the first one did (session fixtures are set up again).
        reports = runtestprotocol(item, nextitem=None, log=False)
        if any(r.failed or r.skipped for r in reports):
            leak.refs[:] = leak.blocks[:] = []  # the logged run below reports it
            break
        del reports
        previous_refs, previous_blocks = refs, blocks
        refs, blocks = _counts()
        if i >= warmup:
            leak.refs[i - warmup] = refs - previous_refs
            leak.blocks[i - warmup] = blocks - previous_blocks
    if grows_every_time(leak.refs) or grows_every_time(leak.blocks):
        config.stash[LEAKS_KEY].append(leak)
    runtestprotocol(item, nextitem=nextitem, log=True)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    leaks = config.stash.get(LEAKS_KEY, [])
    warmup = config.getoption("--refleak-warmup")
    runs = config.getoption("--refleak-runs")
    terminalreporter.section("refleak")
    terminalreporter.write_line(f"each test: {warmup} warm-up + {runs} measured runs "
                                f"(sys.gettotalrefcount, sys.getallocatedblocks)")
    for leak in leaks:
        terminalreporter.write_line(f"LEAK {leak.describe()}", red=True)
    terminalreporter.write_line(f"{len(leaks)} leaking test(s)")


def pytest_sessionfinish(session, exitstatus):
    if session.config.stash.get(LEAKS_KEY, []) and exitstatus == 0:
        session.exitstatus = 1
