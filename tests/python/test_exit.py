"""Interpreter exit with many attached holders, some on frozen stdlib code."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import subprocess_env

SCRIPT = textwrap.dedent(
    """
    import atexit, gc, sys

    def report():
        # Registered before coextra, so it runs after coextra's own teardown.
        s = coextra.stats()
        gc.collect()
        s2 = coextra.stats()
        print("after-teardown", s["holders"], s2["holders_alive"], s2["entries_alive"])

    atexit.register(report)
    import coextra, posixpath, genericpath, os
    coextra.set_auto_collect(False)  # keep all 10,000 attached until exit

    frozen = [posixpath.join, posixpath.dirname, genericpath.exists, os.fspath.__class__]
    for target in (posixpath.join, posixpath.dirname, genericpath.exists):
        coextra.attach(target, ("compiled", target))
    functions = []
    for i in range(10_000):
        ns = {}
        exec(f"def f{i}(x):\\n    return x + {i}\\n", ns)
        f = ns[f"f{i}"]
        coextra.attach(f, (f, f.__code__, ns))  # products reference their own code
        if i % 2:
            functions.append(f)
    print("attached", coextra.stats()["holders"])
    """
)


def test_exit_with_10000_holders_is_clean():
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.split("\n")
    assert "attached 10003" in lines
    assert "after-teardown 0 0 0" in lines, proc.stdout


def test_attaching_after_teardown_is_refused_with_a_clear_error():
    script = textwrap.dedent(
        """
        import atexit

        def late():
            def g():
                pass
            try:
                coextra.attach(g, 1)
            except RuntimeError as exc:
                print("refused:", exc)

        atexit.register(late)
        import coextra
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(), timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert "refused: coextra: the interpreter is shutting down" in proc.stdout


def test_one_shutdown_switches_the_backend_off_then_detaches_every_holder():
    """coextra registers a single atexit callback, and it does both, in that
    order: the backend's callback is released while holders are still there."""
    script = textwrap.dedent(
        """
        import atexit

        def report():
            # Registered before coextra, so it runs after coextra's shutdown.
            print("after-shutdown", evalframe.is_enabled(), coextra.stats()["holders"])

        atexit.register(report)
        before = atexit._ncallbacks()
        import coextra
        from coextra import evalframe
        print("callbacks added", atexit._ncallbacks() - before)

        class Callback:
            def __call__(self, code):
                return ("compiled", code)

            def __del__(self):
                print("callback released with holders attached:", coextra.stats()["holders"] > 0)

        def f():
            return 1

        evalframe.enable(Callback())
        f()
        print("backend on", evalframe.is_enabled(), coextra.stats()["holders"] > 0)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(), timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.split("\n")[:4] == [
        "callbacks added 1",
        "backend on True True",
        "callback released with holders attached: True",
        "after-shutdown False 0",
    ], proc.stdout
