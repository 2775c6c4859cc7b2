"""Where coextra refuses to run: free-threaded builds and subinterpreters."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from coextra._support import check_supported
from conftest import subprocess_env


def test_free_threaded_build_is_refused_with_a_clear_import_error():
    config = {"Py_GIL_DISABLED": 1}
    with pytest.raises(ImportError, match="free-threaded"):
        check_supported(config.get)


def test_default_build_is_accepted():
    check_supported({"Py_GIL_DISABLED": 0}.get)
    check_supported({}.get)


SUBINTERPRETER = textwrap.dedent(
    '''
    import _testcapi
    {main_import}
    code = """
    try:
        import coextra
    except ImportError as exc:
        # 3.13 runs the init function in the main interpreter and only the
        # module's exec in the subinterpreter: pybind11 chains our error.
        print("ImportError:", exc.__cause__ or exc)
    else:
        def f():
            pass
        try:
            coextra.attach(f, 1)
            print("attached in a subinterpreter")
        except RuntimeError as exc:
            print("RuntimeError:", exc)
        print("holder:", coextra.holder(f))
    """
    assert _testcapi.run_in_subinterp(code) == 0
    '''
)


@pytest.mark.parametrize("main_import", ["", "import coextra"], ids=["fresh", "main-imported-first"])
def test_subinterpreters_are_refused_without_hanging(main_import):
    pytest.importorskip("_testcapi")
    proc = subprocess.run(
        [sys.executable, "-c", SUBINTERPRETER.format(main_import=main_import)],
        capture_output=True, text=True, env=subprocess_env(), timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "attached in a subinterpreter" not in out
    assert ("ImportError: coextra supports the main interpreter only" in out
            or ("RuntimeError: coextra supports the main interpreter only" in out
                and "holder: None" in out)), out


# A single-phase C API client imported by a legacy subinterpreter, where
# another co_extra user has filled that interpreter's slots (with a pointer
# that is no object): from 3.13 the client's init, and coextra_import() in
# it, run in the main interpreter, so the import succeeds; the table's
# lookups must then answer "no holder" rather than hand out the other user's
# pointer, and ensure() must refuse. Up to 3.12 the init runs in the
# subinterpreter, and coextra_import() refuses the import. (The inline
# coextra_holder_of() does not check: docs/c-api.md.)
OTHER_USER_IN_A_SUBINTERPRETER = textwrap.dedent(
    '''
    import _testcapi
    import coextra
    code = """
    import ctypes, sys
    sys.path.insert(0, {ext_dir!r})
    try:
        import _capi_two_files as client
    except ImportError as exc:
        print("ImportError:", exc)
        raise SystemExit
    api = ctypes.pythonapi
    api.PyUnstable_Eval_RequestCodeExtraIndex.restype = ctypes.c_ssize_t
    api.PyUnstable_Eval_RequestCodeExtraIndex.argtypes = [ctypes.c_void_p]
    api.PyUnstable_Code_SetExtra.argtypes = [ctypes.py_object, ctypes.c_ssize_t, ctypes.c_void_p]
    def f():
        pass
    for _ in range(8):  # past coextra's index in the main interpreter
        index = api.PyUnstable_Eval_RequestCodeExtraIndex(None)
        assert api.PyUnstable_Code_SetExtra(f.__code__, index, 16) == 0
    print("holder_of:", client.imported_holder_of(f.__code__))
    print("find:", client.imported_find(f.__code__))
    try:
        client.imported_ensure(f.__code__)
    except RuntimeError as exc:
        print("ensure: RuntimeError:", exc)
    """
    assert _testcapi.run_in_subinterp(code) == 0
    '''
)


def test_a_client_imported_by_a_subinterpreter_never_reads_its_slots():
    pytest.importorskip("_testcapi")
    from capi_ext import EXT_DIR, load

    load("_capi_two_files")  # built for this interpreter
    proc = subprocess.run(
        [sys.executable, "-c", OTHER_USER_IN_A_SUBINTERPRETER.format(ext_dir=EXT_DIR)],
        capture_output=True, text=True, env=subprocess_env(), timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    if sys.version_info < (3, 13):
        assert proc.stdout == "ImportError: coextra: the C API is available in the main interpreter only\n"
    else:
        assert proc.stdout.splitlines() == [
            "holder_of: None", "find: None",
            "ensure: RuntimeError: coextra supports the main interpreter only, not subinterpreters"]


EXAMPLE_IN_A_SUBINTERPRETER = textwrap.dedent(
    '''
    import _testcapi
    {main_import}
    code = """
    import sys
    sys.path.insert(0, {ext_dir!r})
    try:
        import example_backend
    except ImportError as exc:
        print("ImportError:", exc)
    else:
        print("imported")
    """
    assert _testcapi.run_in_subinterp(code) == 0
    '''
)


@pytest.mark.parametrize("main_import", ["", "import example_backend"], ids=["fresh", "main-imported-first"])
def test_the_multi_phase_example_backend_refuses_every_subinterpreter(main_import):
    pytest.importorskip("_testcapi")
    from capi_ext import EXT_DIR, load

    load("example_backend")  # built for this interpreter
    proc = subprocess.run(
        [sys.executable, "-c", EXAMPLE_IN_A_SUBINTERPRETER.format(
            main_import=f"import sys; sys.path.insert(0, {EXT_DIR!r}); {main_import}", ext_dir=EXT_DIR)],
        capture_output=True, text=True, env=subprocess_env(), timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ImportError: coextra: the C API is available in the main interpreter only\n"
