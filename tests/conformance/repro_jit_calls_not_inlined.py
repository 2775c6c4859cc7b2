"""Reproducer of the effect "jit-calls-not-inlined" (effects.py) without coextra.

    PYTHON_JIT=1 python repro_jit_calls_not_inlined.py none|reference|coextra

CPython 3.14+ with its JIT available. A hot loop calls a small function; once
the loop is compiled, the JIT inlines the call into its trace and the callee's
code runs as JIT code (``sys._jit.is_active()`` is true there). With a frame
evaluator installed -- CPython's own minimal one
(``_testinternalcapi.set_eval_frame_record``) or coextra.evalframe -- the call
is not inlined: it must go through the evaluator, so the callee runs in the
interpreter and ``is_active()`` stays false there, while the loop itself is
still compiled. test_sys.TestSysJIT.test_jit_is_active asserts the inlining.

Prints "callee ran as JIT code: yes|no" and "loop ran as JIT code: yes|no".
"""

import sys

import _testinternalcapi

mode = sys.argv[1]
if mode == "reference":
    _testinternalcapi.set_eval_frame_record([])
elif mode == "coextra":
    import coextra.evalframe

    coextra.evalframe.enable(lambda code: ("product", code))
elif mode != "none":
    raise SystemExit(f"mode must be none, reference or coextra, not {mode!r}")


def callee() -> bool:
    return sys._jit.is_active()


def hot_loop() -> tuple[bool, bool]:
    callee_active = loop_active = False
    for _ in range(_testinternalcapi.TIER2_THRESHOLD * 4):
        loop_active |= sys._jit.is_active()
        callee_active |= callee()
    return callee_active, loop_active


callee_active, loop_active = hot_loop()
if mode == "reference":
    _testinternalcapi.set_eval_frame_default()
print("callee ran as JIT code:", "yes" if callee_active else "no")
print("loop ran as JIT code:", "yes" if loop_active else "no")
