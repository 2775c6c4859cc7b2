"""Builds coextra._coextra through CMake, so pip and the Makefile share one build.

    python -m pip install .            # also --target DIR
    python -m pip install -e .
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


def find_cmake() -> str:
    try:  # the cmake wheel from the build requirements, when pip installed one
        import cmake

        return os.path.join(cmake.CMAKE_BIN_DIR, "cmake")
    except ImportError:
        found = shutil.which("cmake")
        if found is None:
            sys.exit("coextra needs CMake >= 3.21 to build (pip install cmake, or apt-get install cmake)")
        return found


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        import pybind11

        output_dir = Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        build_dir = Path(self.build_temp).resolve() / "cmake"
        cmake = find_cmake()
        # The release preset (CMakePresets.json) says how; pip says where and with what.
        subprocess.check_call([
            cmake, "-S", str(ROOT), "--preset", "release", "-B", str(build_dir),
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            f"-DCOEXTRA_MODULE_DIR={output_dir}",
        ])
        subprocess.check_call([cmake, "--build", str(build_dir), "--target", "_coextra", "-j", "2"])


class BuildPyWithHeaders(build_py):
    """Ships the C API headers (csrc/include/coextra) inside the package, as
    coextra/include/coextra/, where coextra.get_include() finds them."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "coextra" / "include" / "coextra"
        target.mkdir(parents=True, exist_ok=True)
        for header in sorted((ROOT / "csrc" / "include" / "coextra").glob("*.h*")):
            self.copy_file(str(header), str(target / header.name))


# On the free-threaded build there is nothing to compile: the package installs
# and `import coextra` raises a clear ImportError (coextra/_support.py).
free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))

setup(
    # setuptools' build directory is per interpreter for the compiled parts
    # only; bdist_wheel's staging directory (build/bdist.<platform>) would be
    # shared, so wheels built at once for two Pythons from one checkout could
    # take each other's files.
    options={"build": {"build_base": f"build/setuptools-{sys.implementation.cache_tag}"}},
    package_dir={"": "python"},
    packages=["coextra", "coextra.stress"],
    package_data={"coextra": ["py.typed", "*.pyi"]},
    ext_modules=[] if free_threaded else [CMakeExtension("coextra._coextra")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithHeaders},
    zip_safe=False,
)
