"""Every bad call says, in one style, what was wrong, the value given and
what is accepted: "coextra: <where>: <what> must be <accepted>, not <given>".
A wrong type names the type given; a wrong value repeats the value."""

from __future__ import annotations

import subprocess
import sys

import pytest

import coextra
from coextra import evalframe
from conftest import make_function, subprocess_env


def holder():
    return coextra.holder(make_function(), create=True)


BAD_CALLS = [
    (lambda: coextra.attach(make_function()), TypeError,
     "coextra: attach() missing required argument 'product'"),
    (lambda: coextra.holder(), TypeError, "coextra: holder() missing required argument 'obj'"),
    (lambda: coextra.detach(make_function(), 1), TypeError,
     "coextra: detach() takes at most 1 arguments (2 given)"),
    (lambda: coextra.attach(make_function(), 1, flag=True), TypeError,
     "coextra: attach() got an unexpected or repeated argument 'flag'"),
    (lambda: coextra.attach(42, "product"), TypeError,
     "coextra: attach(): obj must be a code object, a Python function or a bound method of one, not int"),
    (lambda: coextra.holder([].append), TypeError,
     "coextra: holder(): obj must be a code object, a Python function or a bound method of one, "
     "not builtin_function_or_method"),
    (lambda: coextra.detach("f"), TypeError,
     "coextra: detach(): obj must be a code object, a Python function or a bound method of one, not str"),
    (lambda: coextra.attach(make_function(), "product", guard=3), TypeError,
     "coextra: attach(): guard must be callable or None, not int"),
    (lambda: coextra.explain(object()), TypeError,
     "coextra: explain(): obj must be a code object, a Python function or a bound method of one, "
     "not object (for an EphemeronMap key, pass map=)"),
    (lambda: coextra.set_budget(10**30), ValueError,
     f"coextra: set_budget(): nodes must be an int from 1 to {2**31 - 1}, not {10**30}"),
    (lambda: coextra.set_budget(0), ValueError,
     f"coextra: set_budget(): nodes must be an int from 1 to {2**31 - 1}, not 0"),
    (lambda: coextra.set_budget("1000"), TypeError,
     f"coextra: set_budget(): nodes must be an int from 1 to {2**31 - 1}, not str"),
    (lambda: setattr(holder(), "max_entries", 0), ValueError,
     f"coextra: max_entries must be None or an int from 1 to {2**32 - 1}, not 0"),
    (lambda: setattr(holder(), "max_entries", 2**32), ValueError,
     f"coextra: max_entries must be None or an int from 1 to {2**32 - 1}, not {2**32}"),
    (lambda: setattr(holder(), "max_entries", 2.0), TypeError,
     f"coextra: max_entries must be None or an int from 1 to {2**32 - 1}, not float"),
    (lambda: coextra.collect(1), TypeError, "coextra.collect() takes no arguments (1 given)"),
    (lambda: evalframe.reset_stats(1), TypeError, "coextra.evalframe.reset_stats() takes no arguments (1 given)"),
    (lambda: holder().add(), TypeError, "coextra: Holder.add() missing required argument 'product'"),
    (lambda: holder().remove(object()), TypeError,
     "coextra: Holder.remove(): entry must be a coextra.Entry, not object"),
    (lambda: holder().remove(None), TypeError,
     "coextra: Holder.remove(): entry must be a coextra.Entry, not NoneType"),
    (lambda: holder().remove(coextra.attach(make_function(), "elsewhere")), ValueError,
     "coextra: Holder.remove(): the entry is not in this holder"),
    (lambda: holder().add("product", guard=1), TypeError,
     "coextra: Holder.add(): guard must be callable or None, not int"),
    (lambda: coextra.explain(make_function(), map={}), TypeError,
     "coextra: explain(): map must be None or an EphemeronMap, not dict"),
    (lambda: evalframe.enable(print, trace="x"), TypeError,
     "coextra: evalframe.enable(): trace must be True or False, not str"),
    (lambda: coextra.holder(make_function(), create="no"), TypeError,
     "coextra: holder(): create must be True or False, not str"),
    (lambda: coextra.set_auto_collect(None), TypeError,
     "coextra: set_auto_collect(): enabled must be True or False, not NoneType"),
    (lambda: evalframe.EnabledScope(), TypeError, "cannot create 'coextra.evalframe.EnabledScope' instances"),
    (lambda: evalframe.enabled(print).__exit__(None, None, None), RuntimeError,
     "coextra: EnabledScope.__exit__() without a matching __enter__()"),
    (lambda: evalframe.enable(42), TypeError,
     "coextra: evalframe.enable(): callback must be callable, not int"),
    (lambda: evalframe.enable(), TypeError,
     "coextra: evalframe.enable() missing required argument 'callback'"),
    (lambda: evalframe.enable(print, True), TypeError,
     "coextra: evalframe.enable() takes 1 positional argument (2 given); trace is keyword-only"),
    (lambda: evalframe.enabled(42), TypeError,
     "coextra: evalframe.enabled(): callback must be callable, not int"),
    (lambda: coextra.EphemeronMap()[1], TypeError,
     "coextra: EphemeronMap keys must support weak references, not int"),
    (lambda: coextra.EphemeronMap().get(1, 2, 3), TypeError,
     "coextra: EphemeronMap.get() takes 1 or 2 arguments (3 given)"),
    (lambda: coextra.EphemeronMap().popitem(), KeyError, "'coextra: EphemeronMap.popitem(): the map is empty'"),
    (lambda: coextra.EphemeronMap([(make_function(), 1, 2)]), ValueError,
     "coextra: EphemeronMap.update() needs (key, value) pairs, not a sequence of 3 items"),
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS, ids=[m for _, _, m in BAD_CALLS])
def test_a_bad_call_raises_one_clear_error(call, error, message, evalframe_off_afterwards):
    with pytest.raises(error) as raised:
        call()
    assert str(raised.value) == message
    assert not evalframe.is_enabled()


def stress(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coextra.stress", *argv], capture_output=True,
                          text=True, env=subprocess_env(), timeout=120)


@pytest.mark.parametrize("argv, message", [
    (["--payload", "-1"], "--payload must be a number of bytes >= 0, not -1"),
    (["--waves", "0"], "need 1 <= --waves <= -n/--functions, not --waves 0 and -n 10000"),
    (["--stores", "lru"], "unknown store(s) lru; choose from naive (naive co_extra store), "
                          "weakkeydict (WeakKeyDictionary), coextra (coextra)"),
    (["--plot", "/proc/coextra/plot.svg"], "--plot /proc/coextra/plot.svg: cannot write it (No such file or directory)"),
])
def test_the_stress_demo_reports_bad_options_as_usage_errors(argv, message):
    proc = stress(*argv)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"coextra-stress: error: {message}"
    assert "Traceback" not in proc.stderr


def test_the_stress_demo_refuses_a_plot_format_matplotlib_cannot_write_before_running():
    pytest.importorskip("matplotlib")
    proc = stress("--plot", "figures.txt")  # the default run would take seconds first
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "coextra-stress: error: --plot figures.txt: matplotlib cannot write .txt files (choose from ")
    assert ".svg" in proc.stderr and "Traceback" not in proc.stderr


def test_the_stress_demo_accepts_a_store_by_the_label_it_prints():
    proc = stress("-n", "20", "--waves", "2", "--stores", "WeakKeyDictionary,Coextra")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("  ")[0] for line in proc.stdout.splitlines()]
    assert "WeakKeyDictionary" in rows and "coextra" in rows and "naive co_extra store" not in rows
