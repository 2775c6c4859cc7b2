"""coextra.evalframe beside CinderX (Meta's JIT and interpreter, PyPI `cinderx`,
CPython 3.14): both installation orders, both removal orders, results equal to
plain runs, the collector with an immortalized heap, CinderX's GC settings,
fork. Skipped where cinderx is not installed (an optional test dependency:
requirements-py3.14.txt). Each case runs in a child process: CinderX's state is
per process and cannot be undone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import subprocess_env

cinderx = pytest.importorskip("cinderx")
if not cinderx.is_supported_runtime():
    pytest.skip("cinderx does not support this interpreter", allow_module_level=True)

# Defined in every child: a workload whose results a plain run gives too,
# functions the backend has not seen yet (`fresh`), and `seen`, the names of the
# codes the backend's callback compiled.
PRELUDE = textwrap.dedent(
    """
    import gc, json, os, sys
    import cinderx, cinderx.jit as jit
    import coextra, coextra.evalframe as evalframe

    cinderx.init()
    assert cinderx.is_initialized() and jit.is_enabled(), "CinderX and its JIT on"
    seen = []

    def callback(code):
        seen.append(code.co_name)
        return ("product", code)

    SOURCE = '''
    def squares(n):
        return sum(i * i for i in range(n))

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    class Point:
        def __init__(self, x, y):
            self.x, self.y = x, y
        def norm2(self):
            return self.x * self.x + self.y * self.y

    def workload():
        return [squares(300), fib(15), sorted(Point(i, -i).norm2() for i in range(20))[-1]]
    '''

    def fresh():
        ns = {}
        exec(SOURCE, ns)
        return ns

    PLAIN = fresh()["workload"]()

    def report(**values):
        print(json.dumps(values))
    """
)


def run_child(body: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True,
                          text=True, env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_cinderx_first_then_coextra_removed_in_reverse_order():
    r = run_child(
        """
        cinderx.install_frame_evaluator()
        evalframe.enable(callback)
        ns = fresh()
        on = ns["workload"]()
        try:
            jit.force_compile(ns["squares"])
        except RuntimeError as exc:
            compile_refused = str(exc)
        else:
            compile_refused = None
        evalframe.disable()
        cinderx_still = cinderx.is_frame_evaluator_installed()
        cinderx.remove_frame_evaluator()
        after = fresh()["workload"]()
        report(plain=PLAIN, on=on, after=after, seen=sorted(set(seen)), cinderx_still=cinderx_still,
               cinderx_after=cinderx.is_frame_evaluator_installed(), compile_refused=compile_refused)
        """
    )
    assert r["on"] == r["plain"] and r["after"] == r["plain"]
    # coextra runs above CinderX's evaluator and sees the frames it passes down.
    assert {"workload", "squares", "fib", "__init__", "norm2"} <= set(r["seen"])
    assert r["cinderx_still"] is True and r["cinderx_after"] is False
    # CinderX compiles only while its own evaluator is the installed one.
    assert r["compile_refused"] and "something else has done it first" in r["compile_refused"]


def test_cinderx_removed_under_coextra_takes_coextra_out():
    r = run_child(
        """
        cinderx.install_frame_evaluator()
        evalframe.enable(callback)
        cinderx.remove_frame_evaluator()
        enabled_after_removal = evalframe.is_enabled()
        seen.clear()
        after = fresh()["workload"]()
        seen_after = list(seen)
        evalframe.disable()  # coextra no longer installed: nothing to restore
        report(plain=PLAIN, after=after, enabled_after_removal=enabled_after_removal, seen_after=seen_after,
               cinderx_after=cinderx.is_frame_evaluator_installed())
        """
    )
    # CinderX puts CPython's default evaluator back; coextra says it is off.
    assert r["enabled_after_removal"] is False
    assert r["seen_after"] == []
    assert r["cinderx_after"] is False
    assert r["after"] == r["plain"]


def test_coextra_first_cinderx_refuses_to_install():
    r = run_child(
        """
        evalframe.enable(callback)
        try:
            cinderx.install_frame_evaluator()
        except RuntimeError as exc:
            refused = str(exc)
        else:
            refused = None
        try:
            jit.force_compile(fresh()["squares"])
        except RuntimeError as exc:
            compile_refused = str(exc)
        else:
            compile_refused = None
        on = fresh()["workload"]()
        enabled = evalframe.is_enabled()
        evalframe.disable()
        cinderx.install_frame_evaluator()  # with coextra gone, it installs
        installed = cinderx.is_frame_evaluator_installed()
        after = fresh()["workload"]()
        cinderx.remove_frame_evaluator()
        report(plain=PLAIN, on=on, after=after, refused=refused, compile_refused=compile_refused,
               enabled=enabled, installed=installed, seen=sorted(set(seen)))
        """
    )
    assert r["refused"] and "something else has done it first" in r["refused"]
    assert r["compile_refused"] and "something else has done it first" in r["compile_refused"]
    assert r["enabled"] is True and r["installed"] is True
    assert r["on"] == r["plain"] and r["after"] == r["plain"]
    assert {"workload", "squares", "fib"} <= set(r["seen"])


def test_jit_compiled_functions_never_reach_the_backend():
    r = run_child(
        """
        cinderx.install_frame_evaluator()
        ns = fresh()
        compiled = jit.force_compile(ns["squares"]) and jit.is_jit_compiled(ns["squares"])
        evalframe.enable(callback)
        on = ns["workload"]()
        evalframe.disable()
        cinderx.remove_frame_evaluator()
        report(plain=PLAIN, on=on, compiled=compiled, seen=sorted(set(seen)))
        """
    )
    assert r["compiled"] is True
    assert r["on"] == r["plain"]
    # The JIT's code is called directly: no evaluator sees its frames. Its
    # generator expression is interpreted and is seen.
    assert "squares" not in r["seen"]
    assert {"workload", "fib", "<genexpr>"} <= set(r["seen"])


def test_collector_with_an_immortalized_heap():
    r = run_child(
        """
        cinderx.install_frame_evaluator()
        evalframe.enable(callback)
        old = fresh()
        old["workload"]()
        cinderx.immortalize_heap()
        immortal = cinderx.is_immortal(old["squares"].__code__)
        before = coextra.stats()["holders_alive"]
        new = fresh()
        on = new["workload"]()
        with_new = coextra.stats()["holders_alive"]
        new.clear()
        old.clear()  # immortal: its codes and caches stay
        gc.collect()
        coextra.collect()
        after = coextra.stats()["holders_alive"]
        evalframe.disable()
        cinderx.remove_frame_evaluator()
        report(plain=PLAIN, on=on, immortal=immortal, before=before, with_new=with_new, after=after)
        """
    )
    assert r["immortal"] is True
    assert r["on"] == r["plain"]
    assert r["with_new"] > r["before"]
    # The mortal codes' caches are collected; the immortal ones' are kept.
    assert r["after"] == r["before"]


def test_collector_with_cinderx_gc_settings():
    r = run_child(
        """
        parallel = cinderx.has_parallel_gc()
        if parallel:
            cinderx.enable_parallel_gc()
        settings = cinderx.get_parallel_gc_settings()
        cinderx.install_frame_evaluator()
        evalframe.enable(callback)
        fresh()  # its own code's cache lives on
        for _ in range(3):
            gc.collect()
        before = coextra.stats()["holders_alive"]
        ns = fresh()
        on = ns["workload"]()
        ns.clear()
        for _ in range(3):
            gc.collect()
        after = coextra.stats()["holders_alive"]
        evalframe.disable()
        cinderx.remove_frame_evaluator()
        report(plain=PLAIN, on=on, parallel=parallel, settings=repr(settings), before=before, after=after)
        """
    )
    assert r["on"] == r["plain"]
    # Automatic collection runs from CPython's collections, CinderX's settings or not.
    assert r["after"] == r["before"]


def test_fork_with_both_installed():
    r = run_child(
        """
        cinderx.install_frame_evaluator()
        evalframe.enable(callback)
        fresh()["workload"]()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            seen.clear()
            result = fresh()["workload"]()
            enabled = evalframe.is_enabled()
            evalframe.disable()
            # cinderx.is_frame_evaluator_installed() is true only while its evaluator is
            # the installed one, not while coextra's sits above it.
            state = [result == PLAIN, enabled, cinderx.is_frame_evaluator_installed()]
            os.write(write, json.dumps([state, sorted(set(seen))]).encode())
            os._exit(0)
        os.close(write)
        child = json.loads(os.read(read, 65536).decode())
        _, status = os.waitpid(pid, 0)
        on = fresh()["workload"]()
        evalframe.disable()
        cinderx.remove_frame_evaluator()
        report(plain=PLAIN, on=on, child_ok=child[0], child_seen=child[1], status=status)
        """
    )
    assert r["status"] == 0
    # The child's results, coextra on, and CinderX's evaluator back once coextra left.
    assert r["child_ok"] == [True, True, True]
    assert {"workload", "squares", "fib"} <= set(r["child_seen"])
    assert r["on"] == r["plain"]
