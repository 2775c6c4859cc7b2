"""Every entry point holds its own reference to the code object for the whole
call: the function it came from may lose it in the middle (an allocation runs
a GC pass on 3.10/3.11, whose callbacks, finalizers or other threads may
assign f.__code__), and a holder must never be attached to freed memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import coextra
from conftest import make_function, subprocess_env

# 3.12+ runs the automatic GC only at eval breakers, never inside an allocation.
GC_IN_ALLOCATION = sys.version_info < (3, 12)

# In a fresh interpreter (the allocation counts are then the same every run):
# a GC pass starts on the line of the call, inside the entry point's own
# allocation, and its callback assigns f.__code__, which frees the old code.
SWAP_DURING_CALL = textwrap.dedent(
    """
    import gc, sys, coextra
    class K: pass
    ns = {}; exec("def f(): pass", ns); f = ns.pop("f"); other = (lambda: None).__code__
    swapped = []
    def cb(phase, info):
        fr = sys._getframe(1)
        if phase == "start" and fr.f_code.co_name == "go" and fr.f_lineno == LINE:
            gc.callbacks.remove(cb); f.__code__ = other; swapped.append(True)
    gc.callbacks.append(cb)
    def go():
        gc.set_threshold(1); gc.collect(); a = K(); b = K()
        return CALL
    LINE = go.__code__.co_firstlineno + 2
    result = go(); gc.set_threshold(700)
    holder = result if isinstance(result, coextra.Holder) else None
    # The old code died when the call released it: its holder was detached
    # cleanly. Without the call's own reference, the holder was attached to
    # the freed code (its `code` a dead object; SystemError from codeobject.c).
    assert swapped == [True], "the GC pass did not run inside the call"
    assert holder is None or holder.code is None, holder
    assert all(h.code is f.__code__ for h in coextra.holders()), coextra.holders()
    print("ok")
    """
)


@pytest.mark.skipif(not GC_IN_ALLOCATION, reason="3.12+: no GC pass inside an allocation")
@pytest.mark.parametrize("call", ["coextra.holder(f, create=True)", "coextra.holder(f, True)"])
def test_a_code_freed_during_holder_creation_gets_no_dangling_holder(call):
    script = SWAP_DURING_CALL.replace("CALL", call)
    run = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script], env=subprocess_env(), capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
    assert "Error" not in run.stderr, run.stderr


def test_a_code_the_caller_keeps_gets_its_holder():
    f = make_function()
    code = f.__code__
    holder = coextra.holder(f, create=True)
    assert holder.code is code and coextra.holder(code) is holder
    assert coextra.attach(f, "product").product == "product"
    assert coextra.explain(f) == [] and coextra.detach(f) is True
