"""The public headers add no warning to a client's build: coextra/coextra.h
as C99 or later and as C++11 or later, coextra/coextra.hpp as C++14 or
later, under strict warnings made errors, with gcc and with clang where they
are installed. The C++ block of docs/c-api.md is compiled with them, so the
manual's example cannot rot. Each compiler's flags are shown to catch a
planted warning of the kind they guard against."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig

import pytest

import coextra
from conftest import REPO

# Python's own headers come in with -isystem: their warnings are CPython's.
# -Wdisabled-macro-expansion: CPython's Py_XDECREF and friends are macros named
# after the functions they call. Padding and C++98 compatibility are not
# defects of a C++11 header.
STRICT = {
    ("gcc", "c"): ["-Wall", "-Wextra", "-pedantic", "-Wconversion", "-Wsign-conversion", "-Wshadow",
                   "-Wundef", "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wcast-qual"],
    ("gcc", "c++"): ["-Wall", "-Wextra", "-pedantic", "-Wconversion", "-Wsign-conversion", "-Wshadow",
                     "-Wundef", "-Wcast-qual", "-Wold-style-cast", "-Wzero-as-null-pointer-constant",
                     "-Wuseless-cast"],
    ("clang", "c"): ["-Weverything", "-Wno-padded", "-Wno-disabled-macro-expansion",
                     "-Wno-declaration-after-statement", "-Wno-unknown-warning-option"],
    ("clang", "c++"): ["-Weverything", "-Wno-padded", "-Wno-disabled-macro-expansion",
                       "-Wno-c++98-compat", "-Wno-c++98-compat-pedantic", "-Wno-unknown-warning-option"],
}
DRIVERS = {("gcc", "c"): "gcc", ("gcc", "c++"): "g++", ("clang", "c"): "clang", ("clang", "c++"): "clang++"}
STANDARDS = {"c": ["c99", "c11", "c17"], "c++": ["c++11", "c++14", "c++17", "c++20"]}

C_CLIENT = """\
#include <coextra/coextra.h>

PyObject *client_holder(PyObject *code);
PyObject *client_holder(PyObject *code) {
    if (coextra_import() < 0) {
        return NULL;
    }
    PyObject *holder = coextra_holder_of(code);
    return holder != NULL ? holder : COEXTRA_API->ensure(code);
}
"""


def docs_cpp_block() -> str:
    with open(os.path.join(REPO, "docs", "c-api.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```cpp\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, "docs/c-api.md has one C++ block"
    return blocks[0]


def cpp_client(standard: str) -> str:
    if standard == "c++11":  # coextra.hpp needs C++14
        return C_CLIENT.replace("NULL", "nullptr")
    return ("#include <coextra/coextra.hpp>\n\n"
            "PyObject *client(PyObject *code, PyObject *product, PyObject *wanted, PyObject *key,\n"
            "                 PyObject *value);\n"
            "PyObject *client(PyObject *code, PyObject *product, PyObject *wanted, PyObject *key,\n"
            "                 PyObject *value) {\n"
            + docs_cpp_block()
            + "    (void)entry, (void)found, (void)detached, (void)known;\n"
            "    std::size_t visited = 0;\n"
            "    if (h.for_each([&](PyObject *, PyObject *) { ++visited; return 0; }) < 0) return nullptr;\n"
            "    return visited != 0 ? cached.release() : hit.product();\n"
            "}\n")


def compile_client(tmp_path, compiler: str, language: str, standard: str, source: str):
    driver = shutil.which(DRIVERS[compiler, language])
    if driver is None:
        pytest.skip(f"{DRIVERS[compiler, language]} is not installed")
    path = tmp_path / ("client.c" if language == "c" else "client.cpp")
    path.write_text(source)
    return subprocess.run(
        [driver, f"-std={standard}", *STRICT[compiler, language], "-Werror", "-fsyntax-only",
         "-I", coextra.get_include(), "-isystem", sysconfig.get_paths()["include"], str(path)],
        capture_output=True, text=True, timeout=120)


CASES = [(compiler, language, standard)
         for compiler in ("gcc", "clang") for language in ("c", "c++") for standard in STANDARDS[language]]


@pytest.mark.parametrize("compiler,language,standard", CASES,
                         ids=[f"{c}-{s}" for c, _, s in CASES])
def test_including_the_headers_adds_no_warning(tmp_path, compiler, language, standard):
    source = C_CLIENT if language == "c" else cpp_client(standard)
    result = compile_client(tmp_path, compiler, language, standard, source)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_the_cpp_wrapper_says_it_needs_cpp14(tmp_path, compiler):
    result = compile_client(tmp_path, compiler, "c++", "c++11", "#include <coextra/coextra.hpp>\n")
    assert result.returncode != 0
    assert "coextra: coextra.hpp needs C++14 or later" in result.stderr


# A warning of the kind each set of flags is there for, planted in the client.
PLANTED = {"c": "int planted();\n",                         # no prototype
           "c++": "void *planted();\nvoid *planted() { return 0; }\n"}  # 0 as a null pointer


@pytest.mark.parametrize("compiler,language", [("gcc", "c"), ("gcc", "c++"), ("clang", "c"), ("clang", "c++")])
def test_the_flags_catch_a_planted_warning(tmp_path, compiler, language):
    standard = STANDARDS[language][-1]
    source = (C_CLIENT if language == "c" else cpp_client(standard)) + PLANTED[language]
    result = compile_client(tmp_path, compiler, language, standard, source)
    assert result.returncode != 0
    assert "planted" in result.stderr
