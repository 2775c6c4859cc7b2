"""mypy and pyright as a user runs them on code that imports coextra: this
interpreter's, with coextra importable. Each skips the calling test when the
checker is not installed (requirements-dev.txt installs both; pyright also
needs Node.js, which scripts/bootstrap.sh installs from Debian)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, subprocess_env


def mypy(*arguments: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (requirements-dev.txt installs it)")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, *arguments],
        env=subprocess_env(), capture_output=True, text=True, cwd=REPO,
    )


def pyright(*paths: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("pyright") is None:
        pytest.skip("pyright is not installed (requirements-dev.txt installs it)")
    if shutil.which("node") is None:
        # Without Node.js pyright's wrapper would download one from npm.
        pytest.skip("pyright needs Node.js (scripts/bootstrap.sh installs Debian's nodejs)")
    env = subprocess_env()
    env["PYRIGHT_PYTHON_IGNORE_WARNINGS"] = "1"  # no look-up of a newer version
    return subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, *paths],
        env=env, capture_output=True, text=True, cwd=REPO, timeout=600,
    )
