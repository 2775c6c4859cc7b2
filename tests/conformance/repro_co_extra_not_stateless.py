"""Reproducer of the effect "co_extra-not-stateless" (effects.py) without coextra.

    python repro_co_extra_not_stateless.py none|co_extra|reference|coextra

CPython 3.14+. A code object that has a co_extra array is not "stateless" for
CPython: ``_PyCode_VerifyStateless`` (``_testinternalcapi.verify_stateless_code``)
refuses it with "ValueError: only basic code objects are supported". Any
co_extra user gives a code object that array: here ``PyUnstable_Code_SetExtra``
called through ctypes, with no frame evaluator (``co_extra``), or
coextra.evalframe, which stores its cache there when the function runs
(``coextra``). CPython's own minimal evaluator stores nothing and leaves the
code stateless (``reference``). test_code.CodeTest.test_stateless asserts that
functions the tests ran before are stateless. The same check decides whether
concurrent.interpreters can pass a function to another interpreter by its code
(``Interpreter.call``) rather than by pickling it.

Prints "stateless: yes" or "stateless: no (MESSAGE)".
"""

import ctypes
import sys

import _testinternalcapi

mode = sys.argv[1]


def function(a, b):
    return a + b


if mode == "co_extra":
    api = ctypes.pythonapi
    api.PyUnstable_Eval_RequestCodeExtraIndex.restype = ctypes.c_ssize_t
    api.PyUnstable_Eval_RequestCodeExtraIndex.argtypes = [ctypes.c_void_p]
    api.PyUnstable_Code_SetExtra.argtypes = [ctypes.py_object, ctypes.c_ssize_t, ctypes.c_void_p]
    index = api.PyUnstable_Eval_RequestCodeExtraIndex(None)
    # Any non-NULL pointer: no free function was registered for this index.
    if api.PyUnstable_Code_SetExtra(function.__code__, index, 1) != 0:
        raise SystemExit("PyUnstable_Code_SetExtra failed")
elif mode == "reference":
    _testinternalcapi.set_eval_frame_record([])
elif mode == "coextra":
    import coextra.evalframe

    coextra.evalframe.enable(lambda code: ("product", code))
elif mode != "none":
    raise SystemExit(f"mode must be none, co_extra, reference or coextra, not {mode!r}")

function(1, 2)
if mode == "reference":
    _testinternalcapi.set_eval_frame_default()
elif mode == "coextra":
    coextra.evalframe.disable()
try:
    _testinternalcapi.verify_stateless_code(function.__code__)
except ValueError as exc:
    print(f"stateless: no ({exc})")
else:
    print("stateless: yes")
