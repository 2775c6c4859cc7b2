"""pyperformance's programs, loaded from the installed pyperformance package
and run one at a time with their result, for bench/bench_programs.py.

pyperformance ships each benchmark as a script, data-files/benchmarks/bm_NAME/
run_benchmark.py, whose pyperf Runner starts under `if __name__ == "__main__"`:
loaded under another module name, the script only defines its functions. A
Program calls those functions as the script's Runner would, times the part
that the script itself times, and returns what the run computed, so that a
run under a PEP 523 hook can be checked against the right answer.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import os
import pathlib
import tempfile
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

# Installing this extra brings pyperformance (and pyperf).
EXTRA = "coextra[bench]"

# raytrace's image: pyperformance's default, 100 x 100, makes a run several
# times as long as the other programs'; this one keeps it alike.
RAYTRACE_SIZE = (40, 40)
# bench_generators' tree: 100,000 values.
GENERATORS_TREE_SIZE = 100_000
# How far nbody's energy may drift over pyperformance's default run: the
# symplectic integrator conserves it, to well within this.
NBODY_DRIFT = 1e-4


def missing() -> str | None:
    """Why the programs cannot run here, or None."""
    for name in ("pyperf", "pyperformance"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (pip install '{EXTRA}', or pip install pyperformance)"
    return None


def benchmarks_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("pyperformance")
    assert spec is not None and spec.submodule_search_locations
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "data-files" / "benchmarks"


@functools.lru_cache(maxsize=None)
def load(benchmark: str) -> ModuleType:
    """pyperformance's bm_<benchmark>/run_benchmark.py, as module bm_<benchmark>."""
    path = benchmarks_dir() / f"bm_{benchmark}" / "run_benchmark.py"
    spec = importlib.util.spec_from_file_location(f"bm_{benchmark}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def run_richards() -> tuple[float, Any]:
    m = load("richards")
    elapsed, passed = timed(lambda: m.Richards().run(1))
    return elapsed, (passed, m.taskWorkArea.holdCount, m.taskWorkArea.qpktCount)


def run_deltablue() -> tuple[float, Any]:
    # The chain and projection tests print "... failed" when a constraint
    # does not hold, and print nothing otherwise.
    m = load("deltablue")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        elapsed, _ = timed(lambda: m.delta_blue(100))
    return elapsed, printed.getvalue()


@functools.lru_cache(maxsize=None)
def nbody_start() -> list[tuple[list[float], list[float]]]:
    # Taken by the first run's restart, before anything advanced the system.
    return [(list(r), list(v)) for r, v, _ in load("nbody").SYSTEM]


def nbody_restart() -> None:
    # The script advances one solar system (module globals) from run to run;
    # every run here starts from the same positions and velocities.
    for (r, v, _), (r0, v0) in zip(load("nbody").SYSTEM, nbody_start()):
        r[:] = r0
        v[:] = v0


def run_nbody() -> tuple[float, Any]:
    m = load("nbody")
    nbody_restart()
    m.offset_momentum(m.BODIES[m.DEFAULT_REFERENCE])
    before = m.report_energy()
    nbody_restart()
    # bench_nbody offsets the momentum itself, outside its timing.
    elapsed = m.bench_nbody(1, m.DEFAULT_REFERENCE, m.DEFAULT_ITERATIONS)
    return elapsed, (before, m.report_energy())


def check_nbody(result: tuple[float, float]) -> bool:
    before, after = result
    # Before: the Benchmarks Game's reference energy, to its 9 digits.
    return f"{before:.9f}" == "-0.169075164" and abs(after - before) < NBODY_DRIFT


@functools.lru_cache(maxsize=None)
def raytrace_image_path() -> str:
    fd, path = tempfile.mkstemp(prefix="bench_programs_raytrace_", suffix=".ppm")
    os.close(fd)
    return path


def run_raytrace() -> tuple[float, Any]:
    # bench_raytrace writes the last image it rendered, after its timing.
    width, height = RAYTRACE_SIZE
    path = raytrace_image_path()
    try:
        elapsed = load("raytrace").bench_raytrace(1, width, height, path)
        image = pathlib.Path(path).read_bytes()
    finally:
        os.unlink(path)
    header = f"P6 {width} {height} 255\n".encode()
    assert image.startswith(header), image[:32]
    pixels = image[len(header):]
    return elapsed, (len(pixels) // 3, sum(pixels[0::3]), sum(pixels[1::3]), sum(pixels[2::3]))


# Colour sums of the 40 x 40 image on x86-64 glibc, to 0.5%: math.tan() and
# the int() truncations of another libm could move a few pixels by one.
RAYTRACE_SUMS = (64506, 65499, 51350)


def check_raytrace(result: tuple[int, int, int, int]) -> bool:
    pixels, *sums = result
    width, height = RAYTRACE_SIZE
    return pixels == width * height and all(abs(s - e) <= e * 0.005 for s, e in zip(sums, RAYTRACE_SUMS))


@functools.lru_cache(maxsize=None)
def generators_tree() -> Any:
    return load("generators").tree(range(GENERATORS_TREE_SIZE))


def walk(tree: Any) -> None:
    for _ in tree:
        pass


def run_generators() -> tuple[float, Any]:
    # bench_generators builds its tree (outside its timing) on every call,
    # which takes longer than the walk it times: the tree is built once here,
    # and walked as bench_generators walks it.
    m = load("generators")
    elapsed, _ = timed(lambda: walk(generators_tree()))
    return elapsed, list(m.tree(range(10)))


def run_json_dumps() -> tuple[float, Any]:
    m = load("json_dumps")
    cases = [getattr(m, case) for case in m.CASES]
    elapsed, _ = timed(lambda: m.bench_json_dumps([(obj, range(count)) for obj, count in cases]))
    return elapsed, [json.loads(json.dumps(obj)) == obj for obj, _ in cases]


@dataclass(frozen=True)
class Program:
    name: str
    run: Callable[[], tuple[float, Any]]
    check: Callable[[Any], bool]
    what: str


PROGRAMS = [
    Program("richards", run_richards, lambda r: r == (True, 9297, 23246),
            "hold_count 9297 and qpkt_count 23246, the classic figures"),
    Program("deltablue", run_deltablue, lambda r: r == "",
            "chain and projection tests (n = 100): no constraint fails"),
    Program("nbody", run_nbody, check_nbody,
            f"energy before (-0.169075164) and after (within {NBODY_DRIFT:g} of it)"),
    Program("raytrace", run_raytrace, check_raytrace,
            f"{RAYTRACE_SIZE[0]} x {RAYTRACE_SIZE[1]} image: pixel count and colour sums"),
    Program("generators", run_generators,
            lambda r: r == list(range(10)), "a small tree walks in order, as bench_generators asserts"),
    Program("json_dumps", run_json_dumps, lambda r: r == [True] * 4,
            "loads(dumps(case)) == case for its four cases"),
]
