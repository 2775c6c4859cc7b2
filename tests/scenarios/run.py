#!/usr/bin/env python3
"""Runs the leak scenarios of tests/scenarios/LIST under a memory checker.

    run.py --tool valgrind --python .venv/py3.11/bin/python --tier quick
    run.py --tool asan --python .venv/py3.11/bin/python --pythonpath build/asan-py3.11/python
    run.py --tool valgrind --python ... planted-naive-twin      (names select scenarios)

Tools:
  valgrind  memcheck with CPython's own noise suppressed (valgrind/*.supp); a scenario
            fails on any definitely or indirectly lost block and on any invalid
            read, write or free.
  asan      the interpreter with the AddressSanitizer runtime preloaded, for an
            extension built with -DCOEXTRA_SANITIZE=ON (nox -s asan); a scenario
            fails on any ASan, LSan or UBSan report.
  plain     no checker (a quick check that the scenarios themselves run).

Every run uses PYTHONMALLOC=malloc, so each Python object is its own malloc block
that the checker can see. One line per scenario: PASS or FAIL (with the reason and
the log file). Exits 1
if any scenario failed. Logs go to build/leakcheck/<tool>-<python>/<name>.log;
--json FILE also writes every outcome there (docs/benchmarks.md's "Leak checks"
section, from bench/results/leakcheck*.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHECKER_EXIT_CODE = 99  # what valgrind/ASan return when they found something


@dataclass
class Scenario:
    name: str
    tiers: set[str]
    args: list[str]


@dataclass
class Outcome:
    status: str  # PASS, FAIL
    detail: str


def load_scenarios(path: str = os.path.join(HERE, "LIST")) -> list[Scenario]:
    scenarios = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, tiers, *args = shlex.split(line)
                scenarios.append(Scenario(name, set(tiers.split(",")), args))
    return scenarios


def select(scenarios: list[Scenario], tier: str, names: list[str]) -> list[Scenario]:
    """By name when names are given (planted ones only this way or by --tier planted)."""
    if names:
        known = {s.name: s for s in scenarios}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit(f"unknown scenario(s): {', '.join(unknown)}; see {HERE}/LIST")
        return [known[n] for n in names]
    return [s for s in scenarios if tier in s.tiers]


def python_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


# --- valgrind --------------------------------------------------------------------

def valgrind_suppressions(version: str) -> list[str]:
    """The common CPython file plus the one for this version, if there is one."""
    files = [os.path.join(REPO, "valgrind", "cpython.supp"),
             os.path.join(REPO, "valgrind", f"cpython-{version}.supp")]
    return [f for f in files if os.path.exists(f)]


def valgrind_command(python: str, version: str, log: str) -> list[str]:
    return [
        "valgrind", "--tool=memcheck", "--leak-check=full",
        "--show-leak-kinds=definite,indirect", "--errors-for-leak-kinds=definite,indirect",
        # CPython 3.11's int.from_bytes() reads an uninitialised digit in a branchless
        # select (benign) and the taint follows the small-int pointer everywhere, so
        # uninitialised-value checks cannot be suppressed precisely; they are off.
        # Leaks and invalid reads/writes/frees stay on.
        "--undef-value-errors=no",
        "--num-callers=40", f"--error-exitcode={CHECKER_EXIT_CODE}", f"--log-file={log}",
        *[f"--suppressions={s}" for s in valgrind_suppressions(version)],
        python,
    ]


def valgrind_verdict(rc: int, log_text: str) -> Outcome | None:
    problems = []
    for kind in ("Invalid read", "Invalid write", "Invalid free", "Mismatched free"):
        n = len(re.findall(rf"^==\d+== {kind}", log_text, re.M))
        if n:
            problems.append(f"{n} x {kind.lower()}")
    for kind in ("definitely", "indirectly"):
        m = re.search(rf"{kind} lost: ([\d,]+) bytes in ([\d,]+) blocks", log_text)
        if m and m.group(2) != "0":
            problems.append(f"{kind} lost: {m.group(1)} bytes in {m.group(2)} blocks")
    if problems or rc == CHECKER_EXIT_CODE:
        summary = re.search(r"ERROR SUMMARY: .*", log_text)
        problems.append(summary.group(0) if summary else f"valgrind exit code {rc}")
        return Outcome("FAIL", "; ".join(problems))
    return None


# --- AddressSanitizer / LeakSanitizer / UBSan ---------------------------------------

def asan_runtime() -> str:
    """The ASan runtime the extension was built against (clang's), for LD_PRELOAD:
    the interpreter itself is not instrumented, so it must come first. clang 14
    (Debian 12) names it libclang_rt.asan-x86_64.so; clang 19 (Debian 13) keeps it
    as libclang_rt.asan.so in a per-target runtime directory."""
    def clang(*args: str) -> str:
        return subprocess.run(["clang", *args], capture_output=True, text=True).stdout.strip()

    runtime_dir = clang("-print-runtime-dir")
    candidates = [clang("-print-file-name=libclang_rt.asan-x86_64.so"),
                  clang("-print-file-name=libclang_rt.asan.so"),
                  os.path.join(runtime_dir, "libclang_rt.asan.so"),
                  os.path.join(runtime_dir, "libclang_rt.asan-x86_64.so")]
    for path in candidates:
        if os.path.isabs(path) and os.path.exists(path):
            return path
    raise SystemExit("clang's ASan runtime is missing: install libclang-rt-<clang major>-dev")


def lsan_suppressions(version: str) -> str:
    """The file for this CPython version if there is one, else the common one."""
    directory = os.path.join(REPO, "tests", "sanitizers")
    specific = os.path.join(directory, f"lsan-{version}.supp")
    return specific if os.path.exists(specific) else os.path.join(directory, "lsan.supp")


def asan_environment(version: str) -> dict[str, str]:
    return {
        "LD_PRELOAD": asan_runtime(),
        "ASAN_OPTIONS": f"detect_leaks=1:exitcode={CHECKER_EXIT_CODE}:abort_on_error=0"
                        ":detect_odr_violation=0:strict_init_order=1",
        "LSAN_OPTIONS": f"suppressions={lsan_suppressions(version)}:print_suppressions=0",
        "UBSAN_OPTIONS": f"print_stacktrace=1:halt_on_error=1:exitcode={CHECKER_EXIT_CODE}",
    }


def asan_verdict(rc: int, log_text: str) -> Outcome | None:
    problems = []
    for pattern in (r"ERROR: AddressSanitizer: [\w-]+", r"ERROR: LeakSanitizer: [^\n]+",
                    r"SUMMARY: AddressSanitizer: [^\n]+", r"runtime error: [^\n]+"):
        problems += sorted(set(re.findall(pattern, log_text)))
    if problems or rc == CHECKER_EXIT_CODE:
        return Outcome("FAIL", "; ".join(problems) or f"sanitizer exit code {rc}")
    return None


# --- running ---------------------------------------------------------------------

# LeakSanitizer's own tracer thread occasionally crashes ("Tracer caught signal 11",
# clang 14; docs/leak-checks.md); that says nothing about the scenario, so it is
# run again, at most 4 more times.
LSAN_CRASHED = "LeakSanitizer has encountered a fatal error"


def run_one(s: Scenario, tool: str, python: str, version: str, env: dict[str, str],
            log_dir: str, timeout: float) -> Outcome:
    crashes = 0
    for _ in range(5):
        outcome, output = run_once(s, tool, python, version, env, log_dir, timeout)
        if LSAN_CRASHED not in output:
            break
        crashes += 1
        time.sleep(1)
    if crashes:
        outcome.detail = f"{outcome.detail} (LeakSanitizer crashed in {crashes} run(s))".strip()
    return outcome


def run_once(s: Scenario, tool: str, python: str, version: str, env: dict[str, str],
             log_dir: str, timeout: float) -> tuple[Outcome, str]:
    log = os.path.join(log_dir, f"{s.name}.log")
    if tool == "valgrind":
        command = valgrind_command(python, version, log) + s.args
    else:
        command = [python] + s.args
    try:
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome("FAIL", f"timed out after {timeout:.0f} s"), ""
    output = proc.stdout + proc.stderr
    if tool == "valgrind":
        with open(log) as f:
            checker_text = f.read()
        with open(log, "a") as f:
            f.write("\n--- scenario output ---\n" + output)
    else:
        checker_text = output
        with open(log, "w") as f:
            f.write(output)
    verdict = (valgrind_verdict(proc.returncode, checker_text) if tool == "valgrind"
               else asan_verdict(proc.returncode, checker_text) if tool == "asan" else None)
    if verdict is not None:
        return verdict, output
    if proc.returncode != 0:
        tail = " | ".join(output.strip().splitlines()[-3:])
        return Outcome("FAIL", f"exit code {proc.returncode}: {tail}"), output
    return Outcome("PASS", ""), output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", choices=["valgrind", "asan", "plain"], required=True)
    parser.add_argument("--python", required=True, help="the interpreter to run the scenarios with")
    parser.add_argument("--pythonpath", default=os.path.join(REPO, "python"),
                        help="where the coextra package under test is (default: python/)")
    parser.add_argument("--tier", default="quick", choices=["quick", "full", "planted"],
                        help="which scenarios of LIST to run when no names are given (default: quick)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per scenario")
    parser.add_argument("--json", help="also write every scenario's outcome to this file "
                                       "(scripts/bench_summary.py merges bench/results/leakcheck*.json)")
    parser.add_argument("names", nargs="*", help="run these scenarios (any tier) instead")
    args = parser.parse_args(argv)

    scenarios = select(load_scenarios(), args.tier, args.names)
    # The checkers must run the interpreter itself, not a script that starts it
    # (.venv/py3.14/bin/python of scripts/sid-root.sh): valgrind would check the shell.
    args.python = subprocess.run([args.python, "-c", "import sys; print(sys.executable)"], check=True,
                                 capture_output=True, text=True).stdout.strip()
    version = python_version(args.python)
    env = dict(os.environ)
    env.update(PYTHONMALLOC="malloc", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([os.path.abspath(args.pythonpath), HERE]))
    if args.tool == "asan":
        env.update(asan_environment(version))
    log_dir = os.path.join(REPO, "build", "leakcheck", f"{args.tool}-py{version}")
    os.makedirs(log_dir, exist_ok=True)

    counts = {"PASS": 0, "FAIL": 0}
    outcomes = []
    started = time.monotonic()
    for s in scenarios:
        t0 = time.monotonic()
        outcome = run_one(s, args.tool, args.python, version, env, log_dir, args.timeout)
        counts[outcome.status] += 1
        outcomes.append({"name": s.name, "status": outcome.status, "seconds": time.monotonic() - t0,
                         "detail": outcome.detail})
        line = f"{outcome.status:4}  {s.name:26} {args.tool} CPython {version}  {time.monotonic() - t0:6.1f} s"
        if outcome.detail:
            line += f"  {outcome.detail}"
        if outcome.status == "FAIL":
            line += f"  (log: {os.path.relpath(os.path.join(log_dir, s.name + '.log'), REPO)})"
        print(line, flush=True)
    print(f"scenarios ({args.tool}, CPython {version}): {counts['PASS']} passed, "
          f"{counts['FAIL']} failed in {time.monotonic() - started:.1f} s")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"tool": args.tool, "python": version, "tier": "named" if args.names else args.tier,
                       "scenarios": outcomes, "seconds": time.monotonic() - started}, fh, indent=2)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--lsan-suppressions"]:  # for nox -s asan: print the file
        print(lsan_suppressions(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
