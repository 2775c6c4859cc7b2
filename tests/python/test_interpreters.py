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
