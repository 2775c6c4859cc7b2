"""The C API test extensions (tests/capi_ext), built by CMake from the public
header alone into tests/python/_ext, one file per CPython ABI. A sanitized build
(nox -s asan) puts its own elsewhere and names that directory in
COEXTRA_TEST_EXT_DIR, so it never replaces the plain build's files."""

from __future__ import annotations

import importlib
import os
import sys

EXT_DIR = os.environ.get("COEXTRA_TEST_EXT_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "_ext")


def load(name: str):
    """Import example_backend, _capi_two_files or _capi_bench; a missing build is an error, not a skip."""
    if EXT_DIR not in sys.path:
        sys.path.insert(0, EXT_DIR)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(
            f"{name} is not built for this interpreter: build with CMake first "
            f"(make build, or cmake --build build/py{sys.version_info[0]}.{sys.version_info[1]})"
        ) from exc
