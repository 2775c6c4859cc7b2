"""coextra's build, test and benchmark driver.

`make test`, `make bench`, `make leakcheck` and `make conformance` run
sessions of this file (`make demo` does not: scripts/demo.sh); so can you:

    nox -l                              # every session, in the order `make` runs them
    nox -t test                         # what `make test` runs after bootstrapping
    nox -s build pytest                 # build, then the Python tests, every interpreter
    nox -s "pytest(version='3.12')" -- -k evalframe   # one interpreter, pytest arguments

The sessions use the interpreters' own virtual environments, `.venv/py3.X`,
one per supported CPython on the machine, which scripts/bootstrap.sh makes
(with the Debian packages): nox drives, it makes no environment of its own.
CPython 3.14 and 3.15 live in a Debian unstable root (scripts/sid-root.sh):
their `.venv/py3.X/bin/python` runs the root's interpreter, and every other
command of those versions (cmake, ctest, valgrind) runs there too, through the
prefix `in_root(version)`; the checkout has the same path inside and out.
CMake is configured with the presets of CMakePresets.json (docs/building.md):
`dev` for the build session, `asan` for the asan session.
A failing session does not stop the others; nox lists each session's result
at the end and exits non-zero if any failed.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import nox

nox.options.default_venv_backend = "none"
nox.options.tags = ["test"]  # `nox` alone: what `make test` runs after bootstrapping

ROOT = pathlib.Path(__file__).resolve().parent
VENVS = ROOT / ".venv"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


# Every CPython with a venv (scripts/bootstrap.sh), oldest first.
VERSIONS = sorted(
    (venv.name[len("py"):] for venv in VENVS.glob("py3.*") if (venv / "bin" / "python").exists()),
    key=_version_key,
)
NEWEST = VERSIONS[-1:]
# The leak harness's full form and the large conformance selection run on these.
LEAK_VERSIONS = [v for v in ("3.11", "3.12") if v in VERSIONS] or NEWEST
CONFORMANCE_VERSIONS = [v for v in ("3.11", "3.13") if v in VERSIONS] or NEWEST
# make bench runs every benchmark on the newest interpreter, and the
# collector's and EphemeronMap's on these too: their checks are meant to hold
# on every version, and these are the ones users run most.
BENCH_ALSO_VERSIONS = [v for v in ("3.11", "3.13") if v in VERSIONS and v not in NEWEST]
BENCH_ALSO_SCRIPTS = ("bench_collector", "bench_ephemeron")
# The quick leak checks take one interpreter: 3.11 when there is one.
QUICK_LEAK_VERSION = next((v for v in ("3.11", "3.12", "3.13", "3.10") if v in VERSIONS), None)


def python(version: str) -> str:
    return str(VENVS / f"py{version}" / "bin" / "python")


def in_root(version: str) -> list[str]:
    """The prefix that runs a command where `version`'s interpreter lives:
    nothing for the host's, scripts/sid-root.sh for the Debian unstable root's."""
    if (VENVS / f"py{version}" / "in-sid-root").exists():
        return [str(ROOT / "scripts" / "sid-root.sh"), "run"]
    return []


# The interpreters in the Debian unstable root, which has valgrind too.
ROOT_VERSIONS = [v for v in VERSIONS if in_root(v)]


def with_package(**extra: str) -> dict[str, str]:
    """The environment of a command that imports coextra from the source tree."""
    return {"PYTHONPATH": str(ROOT / "python"), **extra}


def cmake_configure(session: nox.Session, version: str, preset: str, build_dir: pathlib.Path, *options: str) -> None:
    """CMake's configure step: a preset of CMakePresets.json, with `version`'s interpreter."""
    session.run(*in_root(version), "cmake", "-S", str(ROOT), "--preset", preset, "-B", str(build_dir),
                f"-DPython_EXECUTABLE={python(version)}", *options, external=True, silent=True)


def cmake_build(session: nox.Session, version: str, build_dir: pathlib.Path) -> None:
    """CMake's build step; only the compiler's errors and warnings are shown."""
    output = session.run(*in_root(version), "cmake", "--build", str(build_dir), "-j", "2", "--", "--no-print-directory",
                         external=True, silent=True)
    for line in (output or "").splitlines():
        if "error" in line or "warning" in line:
            session.warn(line)


@nox.session(tags=["test", "bench", "leakcheck", "conformance"])
@nox.parametrize("version", VERSIONS)
def build(session: nox.Session, version: str) -> None:
    """The extension (into python/coextra/) and the C++ tests and benchmarks
    (into build/py3.X/): the dev preset. Arguments after -- go to CMake's
    configure step."""
    build_dir = ROOT / "build" / f"py{version}"
    if not (build_dir / "CMakeCache.txt").exists() or session.posargs:
        cmake_configure(session, version, "dev", build_dir, *session.posargs)
    cmake_build(session, version, build_dir)


@nox.session(tags=["test"])
@nox.parametrize("version", VERSIONS)
def ctest(session: nox.Session, version: str) -> None:
    """The C++ tests (GoogleTest, an embedded interpreter)."""
    session.run(*in_root(version), "ctest", "--test-dir", str(ROOT / "build" / f"py{version}"), "--output-on-failure",
                external=True)


@nox.session(tags=["test"])
@nox.parametrize("version", VERSIONS)
def pytest(session: nox.Session, version: str) -> None:
    """The Python tests; the packaging checks (builds and installs) on the oldest
    and the newest interpreter."""
    session.run(python(version), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                *(session.posargs or [str(ROOT / "tests" / "python")]),
                env=with_package(COEXTRA_TEST_PACKAGING="1" if version in (VERSIONS[0], VERSIONS[-1]) else "0"),
                external=True)


@nox.session(tags=["test"])
@nox.parametrize("version", VERSIONS)
def evalframe_smoke(session: nox.Session, version: str) -> None:
    """The C API and evalframe benchmark, short: it asserts every frame is a hit."""
    session.run(python(version), str(ROOT / "bench" / "bench_evalframe.py"), "--quick",
                env=with_package(), external=True)


@nox.session(tags=["test"])
@nox.parametrize("version", VERSIONS)
def programs_smoke(session: nox.Session, version: str) -> None:
    """The backend on real programs, short: every result is checked against a
    run without a hook."""
    session.run(python(version), str(ROOT / "bench" / "bench_programs.py"), "--quick",
                env=with_package(), external=True)


@nox.session(tags=["test"])
@nox.parametrize("version", VERSIONS)
def ephemeron_smoke(session: nox.Session, version: str) -> None:
    """The EphemeronMap benchmark, short: it asserts every lookup finds its
    value, a live heap loses nothing and a garbage one loses every entry."""
    session.run(python(version), str(ROOT / "bench" / "bench_ephemeron.py"), "--quick",
                env=with_package(), external=True)


@nox.session(tags=["test"])
@nox.parametrize("version", VERSIONS)
def conformance_small(session: nox.Session, version: str) -> None:
    """CPython's own tests with the backend in every process against a plain
    run, the small selection (docs/conformance.md)."""
    session.run(python(version), str(ROOT / "tests" / "conformance" / "run.py"), "--selection", "small",
                external=True)


# The leak harness (docs/leak-checks.md). Quick forms in `make test`, full
# forms in `make leakcheck`.

def _planted_leaks(session: nox.Session, version: str, asan: bool) -> None:
    # In a minimal environment: with some large environments, clang 14's
    # LeakSanitizer tracer crashes ("Tracer caught signal 11") on the 3.12 naive
    # twin intermittently; with a clean one, not (docs/leak-checks.md).
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "LANG": os.environ.get("LANG", "C.UTF-8"), "PYTHONPATH": str(ROOT / "python"),
           "COEXTRA_LEAKCHECK_ASAN": "1" if asan else "0"}
    session.run("env", "-i", *(f"{k}={v}" for k, v in env.items()),
                python(version), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                str(ROOT / "tests" / "leakcheck"), external=True)


# The fast Python tests the quick refleak hunt runs (the naive twins leak on
# purpose; tests/leakcheck shows they are caught).
REFLEAK_QUICK = ["tests/python/test_api.py", "tests/python/test_lifetime.py",
                 "tests/python/test_collector_shapes.py", "tests/python/test_collector_reentrancy.py",
                 "tests/python/test_evalframe.py"]


@nox.session(tags=["test"])
@nox.parametrize("version", [QUICK_LEAK_VERSION, *ROOT_VERSIONS])
def valgrind_quick(session: nox.Session, version: str) -> None:
    """valgrind over the quick scenarios: one host interpreter, and each
    interpreter of the Debian unstable root with the root's valgrind."""
    session.run(*in_root(version), str(ROOT / "valgrind" / "run.sh"), version, external=True)


@nox.session(tags=["test"])
def refleak_quick(session: nox.Session) -> None:
    """Reference-leak hunting over the fast Python tests (debug CPython)."""
    session.chdir(ROOT)
    session.run(str(ROOT / "scripts" / "refleak.sh"), "-k", "not naive", *REFLEAK_QUICK, external=True)


@nox.session(tags=["test"])
@nox.parametrize("version", [QUICK_LEAK_VERSION, *ROOT_VERSIONS])
def planted_leaks(session: nox.Session, version: str) -> None:
    """Every harness catches the leaks planted for it: one host interpreter,
    and valgrind's in the Debian unstable root."""
    _planted_leaks(session, version, asan=False)


@nox.session(tags=["leakcheck"])
def valgrind_full(session: nox.Session) -> None:
    """valgrind over every scenario, on 3.11 and 3.12."""
    session.run(str(ROOT / "valgrind" / "run.sh"), *LEAK_VERSIONS, "--", "--tier", "full", external=True)


SCENARIOS = str(ROOT / "tests" / "scenarios" / "run.py")
# What every sanitized process gets (tests/scenarios/run.py sets the same for its own).
SANITIZER_ENV = {"PYTHONMALLOC": "malloc", "ASAN_OPTIONS": "detect_leaks=1:exitcode=99",
                 "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=99"}


def _asan_failures(session: nox.Session, version: str, scenario_args: list[str]) -> list[str]:
    """Builds build/asan-py3.X (the asan preset) and runs the C++ suite and the
    scenarios there; the names of the steps that failed."""
    build_dir = ROOT / "build" / f"asan-py{version}"
    package = build_dir / "python"
    try:
        cmake_configure(session, version, "asan", build_dir)
        cmake_build(session, version, build_dir)
    except nox.command.CommandFailed:
        return ["build"]
    # The module really is instrumented, and it is the one that gets imported.
    modules = [str(module) for module in (package / "coextra").glob("_coextra*.so")]
    if not modules or "__asan_report_load" not in session.run("nm", "-D", *modules, external=True, silent=True):
        return [f"no ASan instrumentation in {package / 'coextra'}"]
    suppressions = session.run(python(version), SCENARIOS, "--lsan-suppressions", version,
                               external=True, silent=True).strip()
    failures = []
    try:
        output = session.run("ctest", "--test-dir", str(build_dir), "--output-on-failure", external=True, silent=True,
                             env={**SANITIZER_ENV, "LSAN_OPTIONS": f"suppressions={suppressions}:print_suppressions=0"})
        session.log(next(line for line in output.splitlines() if "tests passed" in line))
    except nox.command.CommandFailed:
        failures.append("ctest")
    try:
        session.run(python(version), SCENARIOS, "--tool", "asan", "--python", python(version),
                    "--pythonpath", str(package), *scenario_args, external=True,
                    env={**SANITIZER_ENV, "COEXTRA_TEST_EXT_DIR": str(package / "_ext")})
    except nox.command.CommandFailed:
        failures.append("scenarios")
    return failures


@nox.session(tags=["leakcheck"])
def asan(session: nox.Session) -> None:
    """ASan+UBSan+LSan builds: the C++ suite and every scenario, on 3.11 and 3.12.
    Arguments after -- go to tests/scenarios/run.py (default: --tier full);
    `-- 3.12 -- --tier planted` picks the interpreters too."""
    versions, scenario_args = LEAK_VERSIONS, session.posargs
    if "--" in scenario_args:
        split = scenario_args.index("--")
        versions, scenario_args = scenario_args[:split], scenario_args[split + 1:]
    failed = [f"{step} (CPython {version})" for version in versions
              for step in _asan_failures(session, version, scenario_args or ["--tier", "full"])]
    if failed:
        session.error(f"failed: {', '.join(failed)}")


@nox.session(tags=["leakcheck"])
def refleak_full(session: nox.Session) -> None:
    """Reference-leak hunting over the whole Python suite (debug CPython)."""
    session.chdir(ROOT)
    session.run(str(ROOT / "scripts" / "refleak.sh"), "-k", "not naive", "tests/python", external=True)


@nox.session(tags=["leakcheck"])
@nox.parametrize("version", LEAK_VERSIONS)
def planted_leaks_asan(session: nox.Session, version: str) -> None:
    """The planted-leak checks, ASan's included (the asan session built them)."""
    _planted_leaks(session, version, asan=True)


@nox.session(tags=["conformance"])
@nox.parametrize("version", CONFORMANCE_VERSIONS)
def conformance_large(session: nox.Session, version: str) -> None:
    """CPython's own tests with the backend in every process, the large
    selection (docs/conformance.md)."""
    session.run(python(version), str(ROOT / "tests" / "conformance" / "run.py"), "--selection", "large",
                external=True)


@nox.session(tags=["bench"])
def bench(session: nox.Session) -> None:
    """Every benchmark on the newest interpreter, one run, one summary:
    bench/*.py (the collector's and EphemeronMap's on BENCH_ALSO_VERSIONS too)
    and the Google Benchmark binaries, merged by
    scripts/bench_summary.py into bench/results/summary.{json,md},
    docs/benchmarks.md and the README's results block. A benchmark that fails is
    reported and the others still run; the session then fails."""
    version = NEWEST[0]
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    # The previous run's files go; the results of the commands this session
    # does not run (scripts/bench_summary.py's EXTRA_PREFIXES) stay.
    for old in results.iterdir():
        if not old.name.startswith(("stress", "soak", "conformance", "leakcheck")):
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    failed = []

    def run_logged(name: str, *command: str, env: dict | None = None) -> None:
        with open(results / f"{name}.log", "w") as log:
            try:
                session.run(*command, env=env, external=True, stdout=log, stderr=log)
            except nox.command.CommandFailed:
                failed.append(name)

    for script in sorted((ROOT / "bench").glob("*.py")):
        session.log(f"bench/{script.name}")
        run_logged(script.stem, python(version), str(script), "--json", str(results / f"{script.stem}.json"),
                   env=with_package())
    for other in BENCH_ALSO_VERSIONS:
        for stem in BENCH_ALSO_SCRIPTS:
            session.log(f"bench/{stem}.py on {other}")
            name = f"{stem}-py{other}"
            run_logged(name, python(other), str(ROOT / "bench" / f"{stem}.py"), "--json",
                       str(results / f"{name}.json"), env=with_package())
    binaries = sorted(p for p in (ROOT / "build" / f"py{version}" / "bench").glob("*")
                      if p.is_file() and os.access(p, os.X_OK))
    if not binaries:
        session.warn(f"no Google Benchmark binaries in build/py{version}/bench (is libbenchmark-dev installed?)")
    for binary in binaries:
        session.log(str(binary.relative_to(ROOT)))
        run_logged(binary.name, str(binary), "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
                   f"--benchmark_out={results / (binary.name + '.json')}", "--benchmark_out_format=json")
    try:
        session.run(python(version), str(ROOT / "scripts" / "bench_summary.py"), str(results),
                    "--markdown-copy", str(ROOT / "docs" / "benchmarks.md"),
                    "--readme", str(ROOT / "README.md"), external=True)
    except nox.command.CommandFailed:
        failed.append("scripts/bench_summary.py")
    if failed:
        session.error(f"failed: {', '.join(failed)} (logs in bench/results/)")
