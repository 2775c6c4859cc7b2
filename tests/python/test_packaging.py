"""`python -m build` and pip build and install coextra through setup.py ->
CMake, on this interpreter: an sdist, a wheel built from it, the sdist
installed into a fresh venv, the wheel with --target, an editable install.

Slow (a full build each), so it runs when COEXTRA_TEST_PACKAGING=1, as `make
test` sets it for the oldest and the newest interpreter. Each check builds
from a copy of the source tree, so the dev build in python/coextra/ is never
touched, and imports the result from a directory where the checkout is not
on sys.path.
"""

from __future__ import annotations

import os
import sys
import tarfile
import venv
import zipfile

import pytest

from conftest import REPO
from distributions import PACKAGING, clean_env, copy_source, run

pytestmark = PACKAGING

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


def version_of_the_tree() -> str:
    namespace: dict = {}
    exec(open(os.path.join(REPO, "python", "coextra", "_version.py")).read(), namespace)
    return namespace["__version__"]


def test_build_makes_an_sdist_and_a_wheel_with_the_license_and_the_one_version(dist):
    sdist, wheel = dist
    version = version_of_the_tree()
    assert sdist.name == f"coextra-{version}.tar.gz"
    assert wheel.name.startswith(f"coextra-{version}-")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "CMakeLists.txt", "csrc/include/coextra/coextra.h", "setup.py"} <= names
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"coextra-{version}.dist-info/METADATA").decode()
    assert f"coextra-{version}.dist-info/licenses/LICENSE" in names
    assert {"coextra/include/coextra/coextra.h", "coextra/py.typed", "coextra/_coextra.pyi",
            "coextra/evalframe.pyi"} <= names
    assert f"Version: {version}" in metadata and "License-Expression: MIT" in metadata


def test_the_sdist_installs_into_a_fresh_venv(dist, tmp_path):
    sdist, _ = dist
    python = fresh_venv(tmp_path)
    # Build isolation: pip fetches the build requirements pyproject.toml names.
    run([python, "-m", "pip", "install", "-q", str(sdist)], cwd=tmp_path)
    out = run([python, "-c", SMOKE], cwd=tmp_path)
    assert "site-packages" in out
    version = run([python, "-c", "import coextra; print(coextra.__version__)"], cwd=tmp_path)
    assert version.strip() == version_of_the_tree()


def test_the_wheel_installs_with_pip_install_target(dist, tmp_path):
    _, wheel = dist
    target = tmp_path / "target"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        cwd=tmp_path)
    env = clean_env()
    env["PYTHONPATH"] = str(target)
    out = run([sys.executable, "-c", SMOKE], cwd=tmp_path, env=env)
    assert out.strip().startswith(str(target))


def fresh_venv(tmp_path) -> str:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    return str(env_dir / "bin" / "python")


def test_pip_install_editable_in_a_fresh_venv_with_build_isolation(tmp_path):
    source = copy_source(str(tmp_path / "src"))
    python = fresh_venv(tmp_path)
    run([python, "-m", "pip", "install", "-q", "-e", source], cwd=tmp_path)
    out = run([python, "-c", SMOKE], cwd=tmp_path)
    assert out.strip().startswith(source)
