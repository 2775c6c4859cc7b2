"""pip builds and installs coextra through setup.py -> CMake, on this interpreter.

Slow (a full build each), so it runs when COEXTRA_TEST_PACKAGING=1, as `make
test` sets it. Each check installs from a copy of the source tree, so the dev
build in python/coextra/ is never touched, and imports the result from a
directory where the checkout is not on sys.path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(
    os.environ.get("COEXTRA_TEST_PACKAGING") != "1",
    reason="packaging checks run under `make test` (COEXTRA_TEST_PACKAGING=1)",
)

SMOKE = (
    "import coextra, os\n"
    "def f(): pass\n"
    "e = coextra.attach(f, 'product')\n"
    "assert coextra.holder(f).lookup() is e\n"
    "pkg = os.path.dirname(coextra.__file__)\n"
    "assert os.path.exists(os.path.join(pkg, 'py.typed'))\n"
    "assert os.path.exists(os.path.join(pkg, '_coextra.pyi'))\n"
    "from coextra.stress import main, _naive\n"  # the demo subpackage ships too
    "print(coextra.__file__)\n"
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


def test_pip_install_target(tmp_path):
    source = copy_source(str(tmp_path / "src"))
    target = tmp_path / "target"
    # No build isolation: this interpreter's venv has setuptools and pybind11.
    run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
         "--target", str(target), source], cwd=tmp_path)
    env = clean_env()
    env["PYTHONPATH"] = str(target)
    out = run([sys.executable, "-c", SMOKE], cwd=tmp_path, env=env)
    assert out.strip().startswith(str(target))


def test_pip_install_editable_in_a_fresh_venv_with_build_isolation(tmp_path):
    source = copy_source(str(tmp_path / "src"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    # Build isolation: pip fetches the build requirements pyproject.toml names.
    run([python, "-m", "pip", "install", "-q", "-e", source], cwd=tmp_path)
    out = run([python, "-c", SMOKE], cwd=tmp_path)
    assert out.strip().startswith(source)
