"""The C API from an installed coextra: the example package examples/backend
built as its users build it, against coextra installed in a fresh venv, never
against this source tree.

The wheel of coextra made from a copy of the tree (the `dist` fixture) is
installed into the venv;
the example, copied out of the tree, is built with pip (setuptools; build
isolation, so pyproject.toml's build requirements are what provides coextra)
and with its CMakeLists.txt, then used. Slow (a build of coextra), so it runs
under COEXTRA_TEST_PACKAGING=1, as test_packaging.py.
"""

from __future__ import annotations

import os
import shutil
import sys
import venv

import pytest

from conftest import REPO
from distributions import PACKAGING, clean_env, run

pytestmark = PACKAGING

USE = (
    "import coextra, example_backend\n"
    "def f(x):\n"
    "    return x + 1\n"
    "example_backend.remember(f, 'int', 'int-version')\n"  # cache.c, on the table module.c imported
    "assert example_backend.recall(f, 'int') == 'int-version'\n"
    "assert example_backend.recall(f, 'str') is None\n"
    "assert coextra.holder(f).entries[0].product == ('int', 'int-version')\n"
    "print(example_backend.__file__)\n"
)


class Installed:
    """A fresh venv with coextra installed from a wheel of this tree."""

    def __init__(self, root, wheel):
        self.root = root
        self.wheels = wheel.parent
        self.venv = root / "venv"
        venv.EnvBuilder(with_pip=True).create(self.venv)
        self.python = str(self.venv / "bin" / "python")
        run([self.python, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(self.wheels),
             "coextra"], cwd=root)
        self.include = run([self.python, "-c", "import coextra; print(coextra.get_include())"],
                           cwd=root).strip()
        assert self.include.startswith(str(self.venv)), self.include

    def example(self, name: str):
        """A copy of examples/backend outside the source tree."""
        return shutil.copytree(os.path.join(REPO, "examples", "backend"), self.root / name,
                               ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, dist):
    _, wheel = dist
    return Installed(tmp_path_factory.mktemp("capi_packaging"), wheel)


def test_the_example_builds_with_pip_from_its_declared_build_requirements(installed):
    example = installed.example("pip-example")
    # Build isolation: pip installs setuptools and coextra (from the wheel) for
    # setup.py, which includes coextra.get_include() of that environment.
    run([installed.python, "-m", "pip", "install", "-q", "--find-links", str(installed.wheels),
         str(example)], cwd=installed.root)
    out = run([installed.python, "-c", USE], cwd=installed.root)
    assert out.strip().startswith(str(installed.venv)), out


def test_the_example_builds_with_cmake_against_the_installed_headers(installed):
    example = installed.example("cmake-example")
    build = installed.root / "cmake-build"
    out = run(["cmake", "-S", str(example), "-B", str(build), f"-DPython_EXECUTABLE={installed.python}"],
              cwd=installed.root)
    assert f"coextra headers: {installed.include}" in out, out
    run(["cmake", "--build", str(build)], cwd=installed.root)
    env = clean_env()
    env["PYTHONPATH"] = str(build)
    out = run([installed.python, "-c", USE], cwd=installed.root, env=env)
    assert out.strip().startswith(str(build)), out
