"""coextra's C API as a third-party extension uses it: example_backend, the
example package of docs/c-api.md (examples/backend), is built from
coextra/coextra.h alone and reaches coextra through the capsule
coextra._coextra._C_API."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import weakref

import pytest

import coextra
from capi_ext import EXT_DIR, load
from conftest import REPO, make_function, subprocess_env

example = load("example_backend")


def test_the_capsule_is_exported_under_its_documented_name():
    capsule = coextra._coextra._C_API
    assert type(capsule).__name__ == "PyCapsule"
    assert 'capsule object "coextra._coextra._C_API"' in repr(capsule)


def test_cached_values_are_found_again_by_a_native_guard():
    f = make_function()
    assert example.recall(f, "int") is None
    example.remember(f, "int", "int-version")
    example.remember(f, "str", "str-version")
    assert example.recall(f, "int") == "int-version"
    assert example.recall(f, "float") is None
    assert example.recall(f.__code__, "str") == "str-version"  # a code object works too


def test_the_c_api_and_the_python_api_see_the_same_holder():
    f = make_function()
    example.remember(f, "k", "v")
    h = coextra.holder(f)
    assert h is not None and len(h) == example.size(f) == 1
    assert h.entries[0].product == ("k", "v")
    coextra.attach(f, "from python")
    assert example.size(f) == 2
    assert example.keys(f) == ["k"]  # the example skips products that are not its pairs


def test_a_native_hit_moves_to_the_front_and_counts():
    f = make_function()
    for key in ("a", "b", "c"):
        example.remember(f, key, key.upper())
    assert example.keys(f) == ["c", "b", "a"]
    assert example.recall(f, "a") == "A"
    assert example.keys(f) == ["a", "c", "b"]
    assert coextra.holder(f).entries[0].hits == 1


class Unequal:
    def __eq__(self, other):
        raise ArithmeticError("no comparing")

    __hash__ = object.__hash__


def test_an_exception_in_a_native_guard_propagates_and_changes_nothing():
    f = make_function()
    example.remember(f, "a", 1)
    example.remember(f, "b", 2)
    with pytest.raises(ArithmeticError, match="no comparing"):
        example.recall(f, Unequal())
    assert example.keys(f) == ["b", "a"]
    assert [e.hits for e in coextra.holder(f)] == [0, 0]


def test_forget_clear_and_detach():
    f = make_function()
    example.remember(f, "a", 1)
    example.remember(f, "b", 2)
    assert example.forget(f, "a") is True
    assert example.forget(f, "a") is False
    assert example.keys(f) == ["b"]
    example.clear(f)
    assert example.size(f) == 0 and coextra.holder(f) is not None
    assert example.detach(f) is True
    assert coextra.holder(f) is None
    assert example.detach(f) is False
    assert example.forget(f, "b") is False


def test_a_value_referencing_its_own_code_is_freed_once_detached():
    coextra.set_auto_collect(False)  # else gc.collect() itself frees the cycle
    f = make_function()
    code_alive = weakref.ref(f.__code__)
    example.remember(f, "self", (f, f.__code__))  # the cycle coextra exists for
    del f
    gc.collect()
    assert code_alive() is not None, "attached: the registry keeps the value, hence the code"
    assert coextra.reset() == 1
    gc.collect()
    assert code_alive() is None
    coextra.set_auto_collect(True)


def test_coextra_import_can_be_called_again():
    assert example.import_again() is None


def test_get_include_points_at_the_public_headers():
    include = coextra.get_include()
    assert os.path.isfile(os.path.join(include, "coextra", "coextra.h"))
    assert os.path.isfile(os.path.join(include, "coextra", "coextra.hpp"))


def test_the_built_package_ships_the_headers_where_get_include_finds_them(tmp_path):
    # The step pip runs for the pure-Python part of the package (setup.py's
    # BuildPyWithHeaders); the extension build is not needed for this check.
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    package = tmp_path / "coextra"
    assert (package / "include" / "coextra" / "coextra.h").is_file()
    assert (package / "include" / "coextra" / "coextra.hpp").is_file()
    found = subprocess.run(
        [sys.executable, "-c",
         "import importlib.util, sys; "
         f"spec = importlib.util.spec_from_file_location('inc', {str(package / '_include.py')!r}); "
         "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); print(m.get_include())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert found == str(package / "include")


def test_a_file_that_did_not_import_raises_naming_coextra_import_instead_of_crashing():
    # _capi_two_files calls coextra_import() in one file and uses the table in
    # others that share nothing with it (tests/capi_ext/two_files): the trap of
    # a static table per file. A subprocess, so that a crash fails this test
    # instead of ending the run.
    load("_capi_two_files")  # built, or a clear ImportError here
    script = (
        "import _capi_two_files as m\n"
        "def f(): pass\n"
        "for name in ('ensure', 'holder_of', 'inline_holder_of', 'cpp_ensure'):\n"
        "    try:\n"
        "        getattr(m, name)(f.__code__)\n"
        "        print(name, 'no exception')\n"
        "    except Exception as error:\n"
        "        cause = error.__cause__ or error\n"  # SystemError for a result with an exception set
        "        print(name, type(cause).__name__, cause)\n"
        "print('imported_ensure', m.imported_ensure(f.__code__))\n"
    )
    env = subprocess_env()
    env["PYTHONPATH"] = os.pathsep.join([EXT_DIR, env["PYTHONPATH"]])
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert len(lines) == 5, proc.stdout
    for line in lines[:4]:
        assert " RuntimeError coextra: " in line and "coextra_import()" in line, line
        assert "COEXTRA_API_UNIQUE_SYMBOL" in line, line
    assert lines[4] == "imported_ensure True", "the file that imported works"


QUOTED_FILE = re.compile(r"\A# [\w./-]+\n")


def test_the_manual_quotes_the_example_package_as_it_is():
    # docs/c-api.md shows the example's files in pieces: each piece, up to the
    # C++ block (which is not from the example), must be in one of them.
    with open(os.path.join(REPO, "docs", "c-api.md"), encoding="utf-8") as fh:
        manual = fh.read()
    manual = manual[:manual.index("```cpp")]
    example = os.path.join(REPO, "examples", "backend")
    files = []
    for directory, _, names in os.walk(example):
        for name in names:
            if not name.endswith((".c", ".h", ".toml", ".py", ".txt")):
                continue
            with open(os.path.join(directory, name), encoding="utf-8") as fh:
                files.append(fh.read())
    blocks = re.findall(r"```(\w+)\n(.*?)```", manual, re.S)
    assert {language for language, _ in blocks} == {"toml", "python", "cmake", "c"}
    assert len(blocks) >= 9
    for _, block in blocks:
        block = QUOTED_FILE.sub("", block, count=1)  # test_docs.py checks a named file's block
        assert any(block in text for text in files), f"not in examples/backend:\n{block}"
