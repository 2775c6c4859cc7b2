"""Building coextra from a copy of this tree, for the packaging tests
(test_packaging.py, test_capi_packaging.py): slow, so they run under
COEXTRA_TEST_PACKAGING=1, as `make test` sets it for the oldest and the
newest interpreter. The `dist` fixture (conftest.py) builds once per run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

PACKAGING = pytest.mark.skipif(
    os.environ.get("COEXTRA_TEST_PACKAGING") != "1",
    reason="packaging checks run under `make test` (COEXTRA_TEST_PACKAGING=1)",
)


def copy_source(dest: str) -> str:
    ignore = shutil.ignore_patterns(".git", ".venv", "build", "*.so", "__pycache__", ".pytest_cache",
                                    ".hypothesis", "*.egg-info", "demo-output", "results")
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(cmd, cwd, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env or clean_env(), capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout



def build_distributions(root):
    """`python -m build` on a copy of the tree: the sdist, then a wheel built
    from that sdist (so the sdist must hold everything a build needs)."""
    source = copy_source(str(root / "src"))
    out = root / "dist"
    # No build isolation: this venv has setuptools and pybind11, and CMake
    # comes from the system (setup.py uses the cmake wheel only when installed).
    run([sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check", "--outdir", str(out),
         source], cwd=root)
    [sdist] = out.glob("coextra-*.tar.gz")
    [wheel] = out.glob("coextra-*.whl")
    return sdist, wheel
