"""Conformance harness (tests/conformance/run.py): the coextra.evalframe backend in every process.

run.py prepends this directory (and the coextra package's) to PYTHONPATH, so every
Python process of a test run imports this module at startup -- regrtest itself and
every interpreter the tests spawn that keeps the environment (not ``-I``, ``-E`` or
``-S``, nor a replaced PYTHONPATH).

    COEXTRA_CONFORMANCE=1          enable the backend, with a callback whose product
                                   references its code object, as a real backend's does:
                                   ``lambda code: ("product", code)``
    COEXTRA_CONFORMANCE=native     the same with a callback written in C
                                   (``operator.itemgetter``: its product, an itemgetter,
                                   references the code too), so that no tracer or
                                   profiler can see a Python frame of the callback
    COEXTRA_CONFORMANCE=reference  not coextra: CPython's own test evaluator
                                   (``_testinternalcapi.set_eval_frame_record``, 3.11+),
                                   the smallest PEP 523 hook there is; a difference it
                                   shows too is inherent to PEP 523, not coextra's
    COEXTRA_CONFORMANCE_STATS=DIR  at exit, write this process's evalframe.stats() to
                                   DIR/<pid>-<n>.json (run.py checks compiles > 0)

Unset (or "0"), this module only chains. Either way it then runs the next
``sitecustomize`` on sys.path (a distribution's or a virtual environment's), so
the plain run and the backend run see the same startup. When the backend is
asked for and coextra cannot be imported or enabled, the process prints why and
exits with status 97: the harness must never compare two plain runs. (A
subinterpreter, which coextra does not support, runs without the backend.)
"""

import os
import sys

_ENV = "COEXTRA_CONFORMANCE"
_STATS_ENV = "COEXTRA_CONFORMANCE_STATS"
EXIT_NO_BACKEND = 97


def _product(code):
    # What a compiling backend stores: something that references its code object
    # (the case coextra exists for). Runs with the backend switched off.
    return ("product", code)


def _write_stats(directory, evalframe):
    # No imports at exit (json would be one): the stats are a flat dict of ints.
    stats = evalframe.stats()
    fields = ", ".join('"%s": %d' % (key, value) for key, value in sorted(stats.items()))
    argv = " ".join(sys.argv)[:200].replace("\\", "/").replace('"', "'")
    text = '{"pid": %d, "argv": "%s", "stats": {%s}}\n' % (os.getpid(), argv, fields)
    n = 0
    while True:
        path = os.path.join(directory, "%d-%d.json" % (os.getpid(), n))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            n += 1
            continue
        except OSError:
            return  # the directory is gone (the harness cleaned up): nothing to report to
        break
    try:
        os.write(fd, text.encode("ascii", "replace"))
    finally:
        os.close(fd)


def _in_subinterpreter():
    try:
        import _thread
        if hasattr(_thread, "_is_main_interpreter"):  # 3.12+
            return not _thread._is_main_interpreter()
        import _xxsubinterpreters as interpreters  # 3.10, 3.11
        return interpreters.get_current() != interpreters.get_main()
    except Exception:
        return False


def _enable_reference():
    """CPython's test evaluator: records each function frame's name in a list, then
    runs the frame with _PyEval_EvalFrameDefault."""
    try:
        import _testinternalcapi
        record = _testinternalcapi.set_eval_frame_record
    except (ImportError, AttributeError) as exc:
        if _in_subinterpreter():
            return
        sys.stderr.write("coextra conformance: %s=reference needs "
                         "_testinternalcapi.set_eval_frame_record (CPython 3.11+): %s\n" % (_ENV, exc))
        sys.stderr.flush()
        os._exit(EXIT_NO_BACKEND)
    # One reference per function frame (8 bytes each; large for a long module).
    # Never trimmed: a Python gc callback would show up in profilers' output.
    names = []
    record(names)
    import atexit
    # Off at exit, as coextra's backend is: the hook needs its module, which
    # finalization destroys before the last frames run.
    atexit.register(_testinternalcapi.set_eval_frame_default)
    directory = os.environ.get(_STATS_ENV)
    if directory:

        class Stats:
            @staticmethod
            def stats():
                # "compiles": run.py's check that the hook saw frames.
                return {"frames": len(names), "compiles": len(names)}

        atexit.register(_write_stats, directory, Stats)


def _enable(kind):
    if kind == "reference":
        _enable_reference()
        return
    try:
        try:
            from coextra import evalframe
        except ImportError:
            if _in_subinterpreter():
                # coextra supports the main interpreter only (README, Limits): a
                # subinterpreter a test creates runs without the backend.
                return
            raise
        if kind == "native":
            import operator
            callback = operator.itemgetter
        else:
            callback = _product
        evalframe.enable(callback)
        if not evalframe.is_enabled():
            raise RuntimeError("evalframe.is_enabled() is False after enable()")
    except BaseException as exc:  # ImportError, an unsupported interpreter, ...
        sys.stderr.write(
            "coextra conformance: %s=%s asks for the coextra.evalframe backend, but it "
            "could not be enabled in %s (%s: %s); sys.path=%r. Refusing to run without "
            "it.\n" % (_ENV, os.environ.get(_ENV), sys.executable, type(exc).__name__, exc,
                       sys.path))
        sys.stderr.flush()
        os._exit(EXIT_NO_BACKEND)
    directory = os.environ.get(_STATS_ENV)
    if directory:
        import atexit
        # Registered after coextra's own atexit hooks, so it runs before them
        # (last registered, first run) while the backend is still on.
        atexit.register(_write_stats, directory, evalframe)


def _chain():
    """Run the next sitecustomize on sys.path, the one this module shadows."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec("sitecustomize", path)
    except Exception:
        return
    if spec is None or spec.loader is None:
        return
    from importlib.util import module_from_spec
    module = module_from_spec(spec)
    sys.modules["_coextra_conformance_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get(_ENV, "0") not in ("", "0"):
    _enable(os.environ[_ENV])
_chain()
