"""Known effects of the coextra.evalframe backend on CPython's own tests (data for run.py).

Each entry names the CPython versions it applies to, the test ids it explains
(fnmatch patterns over full ids such as ``test.test_dis.DisTests.test_loop_quicken``:
specific tests or patterns over one test name, never a whole module without a
``message``), the outcomes the plain and the backend run must have, a regular
expression the backend's failure text must match, and why. A difference run.py
finds is explained only when one entry matches all of these; anything else
fails the harness. ``MODULE::process`` is the run as a whole (exit status,
regrtest's verdict): its outcomes are "ran" or e.g. "exit status -11".

Two kinds:

- ``pep523``: any frame evaluator does it. Each was checked with
  ``run.py --evaluator reference``, which runs the same tests under CPython's own
  minimal evaluator (``_testinternalcapi.set_eval_frame_record``) and no coextra,
  and shows the same failure.
- ``cache``: any backend that caches a product referencing its code object in
  ``co_extra`` does it, which is the situation coextra exists for; the reference
  evaluator stores nothing and does not show these.

Where an entry has a reproducer (tests/conformance/repro_*.py, run by
tests/python/test_conformance_effects.py), it shows the effect without coextra.

Not listed on purpose: tracers and profilers seeing the callback's own frames
(test_sys_settrace, test_sys_setprofile, test_bdb, test_pdb, test_doctest's pdb
tests, test_trace, test_profile and test_cprofile on 3.10 and 3.11): that is a
coextra defect, fixed by running the callback with tracing suspended.

docs/conformance.md explains each effect at more length.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re

ALL = ("3.10", "3.11", "3.12", "3.13", "3.14", "3.15")


@dataclasses.dataclass(frozen=True)
class Effect:
    name: str
    kind: str  # "pep523" or "cache"
    versions: tuple[str, ...]  # "3.11", ...
    tests: tuple[str, ...]  # fnmatch patterns over full test ids
    message: str  # regex the backend's failure text must match (re.search)
    reason: str
    plain: tuple[str, ...] = ("pass",)  # the plain run's outcome (fnmatch patterns)
    backend: tuple[str, ...] = ("failure", "error")  # the backend run's outcome

    def matches(self, test: str, plain: str, backend: str, text: str) -> bool:
        return (
            any(fnmatch.fnmatchcase(plain, p) for p in self.plain)
            and any(fnmatch.fnmatchcase(backend, p) for p in self.backend)
            and any(fnmatch.fnmatchcase(test, p) for p in self.tests)
            and re.search(self.message, text or "") is not None
        )


EFFECTS: list[Effect] = [
    Effect(
        name="no-call-specialization",
        kind="pep523",
        versions=("3.11", "3.12", "3.13", "3.14", "3.15"),
        tests=(
            "test.test_dis.DisTests.test_loop_quicken",
            "test.test_dis.DisWithFileTests.test_loop_quicken",
        ),
        message=r"CALL_PY_(WITH_DEFAULTS|GENERAL)",
        reason="The specializer does not turn CALL into CALL_PY_* (calls that push the "
               "callee's frame inline) while a frame evaluator is installed "
               "(SPEC_FAIL_CALL_PEP_523): every Python call must go through the evaluator. "
               "The quickened disassembly shows the adaptive/generic CALL.",
    ),
    Effect(
        name="no-inlining-specializations",
        kind="pep523",
        versions=("3.13", "3.14"),
        tests=(
            "test.test_opcache.TestRacesDoNotCrash.test_binary_subscr_getitem",
            "test.test_opcache.TestRacesDoNotCrash.test_for_iter_gen",
            "test.test_opcache.TestRacesDoNotCrash.test_load_attr_getattribute_overridden",
            "test.test_opcache.TestRacesDoNotCrash.test_load_attr_property",
            "test.test_opcache.TestSpecializer.test_binary_subscr",
            "test.test_opcache.TestSpecializer.test_for_iter",
            "test.test_opcache.TestSpecializer.test_send_with",
            "test.test_opcache.TestSpecializer.test_send_yield_from",
        ),
        message=r"'(BINARY_SUBSCR_GETITEM|BINARY_OP_SUBSCR_GETITEM|FOR_ITER_GEN|SEND_GEN"
                r"|LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN|LOAD_ATTR_PROPERTY)' not found in",
        reason="The other specializations that push a Python frame without calling the "
               "evaluator (__getitem__, generators in for loops, __getattribute__ "
               "overrides, properties) are refused too while a frame evaluator is "
               "installed; these tests assert that the specialized instruction appears.",
    ),
    Effect(
        name="c-stack-per-python-call",
        kind="pep523",
        versions=("3.12", "3.13", "3.14"),
        tests=(
            "test.test_call.TestRecursion.test_super_deep",
            "test.test_functools.TestLRUPy.test_lru_recursion",
            "test.test_traceback.TracebackFormatTests.test_recursive_traceback_cpython_internal",
            "test.test_traceback.TracebackFormatTests.test_recursive_traceback_python",
        ),
        message=r"RecursionError|\d+ not found in range\(",
        reason="From 3.12 a Python-to-Python call that goes through a frame evaluator is a "
               "C call, and each one counts against the C recursion limit "
               "(Py_C_RECURSION_LIMIT), which is lower than the Python one the tests "
               "raise with sys.setrecursionlimit. Deep recursion raises RecursionError "
               "earlier; tracebacks of a RecursionError are shorter.",
    ),
    Effect(
        name="async-for-exception-events",
        kind="pep523",
        versions=("3.12", "3.13", "3.14"),
        tests=("test.test_sys_settrace.*.test_20_async_for_loop",),
        message=r"events did not match expectation",
        reason="Without the inlining specializations (SEND_GEN, FOR_ITER_GEN) the end of "
               "an async iterator is reported differently to sys.settrace: an extra "
               "'exception' event for the StopAsyncIteration of each step of the async "
               "for loop. The reference evaluator shows the same events.",
    ),
    Effect(
        name="monitoring-calls-not-inlined",
        kind="pep523",
        versions=("3.12", "3.13", "3.14"),
        tests=(
            "test.test_monitoring.ExceptionMonitoringTest.test_implicit_stop_iteration",
            "test.test_monitoring.MonitoringCountTest.test_c_return_count",
        ),
        message=r"\[\] != \[\('raise', <class 'StopIteration'>\)\]|3 != 2",
        reason="sys.monitoring: a generator exhausted by a for loop raises no StopIteration "
               "event when FOR_ITER_GEN is not used, and a Python call made through the "
               "evaluator (not inlined) is reported with C_RETURN like a C call, so "
               "f2() counts 3 C_RETURN events instead of 2.",
    ),
    Effect(
        name="monitoring-left-on",
        kind="pep523",
        versions=("3.12", "3.13", "3.14"),
        # Any test of the module, but only with this failure: the setUp check that
        # no earlier test left sys.monitoring events on.
        tests=("test.test_monitoring.*",),
        message=r"in setUp\n\s*self\.assertEqual\(sys\.monitoring\.get_events\(tool\), 0\)",
        reason="test_c_return_count (above) fails before it switches its events off, and "
               "every later test of test_monitoring then fails the setUp check that no "
               "earlier test left monitoring on. A consequence of the previous entry.",
    ),
    Effect(
        name="jit-calls-not-inlined",
        kind="pep523",
        versions=("3.14", "3.15"),
        tests=("test.test_sys.TestSysJIT.test_jit_is_active",),
        message=r"Process return code is 1",
        reason="With the JIT on (PYTHON_JIT=1), a hot loop's trace inlines the Python "
               "functions it calls, so they run as JIT code. With a frame evaluator "
               "installed the call is not inlined (it must go through the evaluator): "
               "the callee runs in the interpreter and sys._jit.is_active() is false "
               "there, while the loop itself is still compiled. The test asserts true in "
               "the callee. Reproducer: repro_jit_calls_not_inlined.py.",
    ),
    Effect(
        name="extra-gc-objects",
        kind="cache",
        versions=ALL,
        tests=("test.test_descr.ClassPropertiesAndMethods.test_slots",),
        message=r"\d+ != \d+",
        reason="The first call of a function stores a holder, an entry and the product: "
               "three more objects in gc.get_objects(). test_slots counts the GC objects "
               "around the first calls of G.__eq__ and finds 3 more.",
    ),
    Effect(
        name="code-freed-by-collection",
        kind="cache",
        versions=ALL,
        tests=(
            "test.test_code.CoExtra.test_free_called",
            "test.test_code.CoExtra.test_free_different_thread",
        ),
        message=r"(None|100) != (100|500)",
        reason="A code object kept by a cached product that references it (here eval()'s "
               "<module> code, whose co_consts hold the lambda's code) dies at the next "
               "collection, not when its last outside reference goes: the tests expect "
               "the co_extra free function to run at `del f`.",
    ),
    Effect(
        name="co_extra-not-stateless",
        kind="cache",
        versions=("3.14", "3.15"),
        tests=("test.test_code.CodeTest.test_stateless",),
        message=r"ValueError: only basic code objects are supported",
        reason="CPython does not count a code object that has a co_extra array as "
               "stateless (_PyCode_VerifyStateless), and every function the backend ran "
               "has one. test_stateless asserts that functions of "
               "test._code_definitions, which earlier tests ran, are stateless. "
               "Reproducer: repro_co_extra_not_stateless.py (a co_extra set through "
               "ctypes, no frame evaluator, shows it too).",
    ),
    Effect(
        name="blocks-freed-a-collection-later", kind="cache", versions=ALL,
        tests=("test.test_sys.SysModuleTest.test_getallocatedblocks",),
        message=r"\d+ not found in range\(\d+, \d+\)",
        reason="A cache whose code only cyclic garbage references is live when the "
               "automatic pass runs, at the start of a collection; that collection frees "
               "the garbage, and the next one the cache. The test calls gc.collect() twice "
               "and expects the second to free fewer than 50 blocks.",
    ),
    Effect(
        name="foreign-co_extra-free-function",
        kind="cache",
        versions=ALL,
        tests=("test_code::process",),
        plain=("ran",),
        backend=("exit status -11",),
        # Faulthandler's stack names the final collection; from 3.14 no stack is
        # printed and the output ends with regrtest's verdict.
        message=r"Garbage-collecting|Result: [^\n]*\Z",
        reason="test_code registers a co_extra free function written in Python (ctypes) "
               "and lets it die with the module. CPython calls every registered free "
               "function for every code object that has a co_extra array, with NULL for "
               "the indexes it never set; with a backend that uses co_extra almost every "
               "code object has one, so a code object freed during the final collections "
               "calls the dead free function: segmentation fault after the tests ran. "
               "Reproduced without coextra or PEP 523 by any second co_extra user "
               "(docs/conformance.md).",
    ),
]

KINDS = ("pep523", "cache")


def for_version(version: str) -> list[Effect]:
    return [e for e in EFFECTS if version in e.versions]


def explain(effects: list[Effect], version: str, test: str, plain: str, backend: str,
            text: str) -> Effect | None:
    for effect in effects:
        if version in effect.versions and effect.matches(test, plain, backend, text):
            return effect
    return None
