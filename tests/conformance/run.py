#!/usr/bin/env python3
"""Conformance harness: CPython's own regression tests with coextra.evalframe enabled.

    python tests/conformance/run.py [--selection small|large] [--jobs N] [--markdown FILE]

Runs each module of the selection twice with ``python -m test -v --junit-xml FILE
MODULE``: once plain, once with the coextra.evalframe backend enabled in every
process (sitecustomize.py in this directory, COEXTRA_CONFORMANCE=1; the callback
stores ``("product", code)``, a product that references its code object). Both runs
get the same environment except that one variable. Per-test outcomes come from
the JUnit XML, completed from the verbose output (regrtest's XML leaves a test
whose subtests failed without a name). A test whose outcome differs is a
*difference*; a difference matching an entry of effects.py (an inherent effect
of PEP 523 on this CPython version) is *explained*. Modules with unexplained
differences are run again both ways (``--reruns``); a difference that does not
come back is reported as *flaky* and does not fail the run.

Test ids are unittest's (``test.test_dis.DisTests.test_loop_quicken``), plus
``MODULE::process`` for the run as a whole (exit status, regrtest's verdict), so a
crash at exit is a difference too. A module whose plain run does not complete
(crash, ``--timeout``) cannot be compared: it is run again, and fails if it
still does not complete. ``--evaluator reference`` runs the second run under
CPython's own minimal PEP 523 evaluator instead of coextra: a difference that
shows there too is inherent to PEP 523.

Exit status: 0 when every difference is explained (or flaky); 1 when one is not,
a plain run did not complete, or a module's backend run shows no compiled frames
(the backend was not on); 2 for a harness error. The interpreter is the one
running this script, or ``--python``; coextra must be importable by it from
../../python (the built extension) or its installation. docs/conformance.md has
the details and the results.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import effects as effects_module  # noqa: E402

# Modules of CPython's Lib/test. Modules missing from an interpreter's test
# package are listed as skipped for it. Order: slowest first (better packing
# over --jobs workers).
SMALL = [
    "test_weakref",
    "test_gc",
    "test_exceptions",
    "test_sys",
    "test_coroutines",
    "test_asyncgen",
    "test_dis",
    "test_generators",
    "test_sys_settrace",
    "test_scope",
]

LARGE = [
    "test_asyncio",
    "test_signal",
    "test_subprocess",
    "test_threading",
    "test_logging",
    "test_faulthandler",
    "test_queue",
    "test_importlib",
    "test_cmd_line",
    "test_weakref",
    "test_pickle",
    "test_capi",
    "test_unittest",
    "test_cmd_line_script",
    "test_audit",
    "test_compile",
    "test_exceptions",
    "test_doctest",
    "test_ast",
    "test_datetime",
    "test_sys",
    "test_set",
    "test_gc",
    "test_argparse",
    "test_decimal",
    "test_itertools",
    "test_json",
    "test_pdb",
    "test_fstring",
    "test_tracemalloc",
    "test_runpy",
    "test_warnings",
    "test_traceback",
    "test_trace",
    "test_inspect",
    "test_enum",
    "test_threading_local",
    "test_cprofile",
    "test_asyncgen",
    "test_coroutines",
    "test_descr",
    "test_collections",
    "test_typing",
    "test_functools",
    "test_dis",
    "test_re",
    "test_dataclasses",
    "test_embed",
    "test_site",
    "test_zipimport",
    "test_generators",
    "test_sys_settrace",
    "test_profile",
    "test_atexit",
    "test_builtin",
    "test_code",
    "test_types",
    "test_contextlib",
    "test_contextlib_async",
    "test_class",
    "test_dict",
    "test_copy",
    "test_operator",
    "test_abc",
    "test_property",
    "test_bdb",
    "test_frame",
    "test_finalization",
    "test_with",
    "test_list",
    "test_opcache",
    "test_patma",
    "test_grammar",
    "test_syntax",
    "test_lltrace",
    "test_call",
    "test_extcall",
    "test_iter",
    "test_genexps",
    "test_decorators",
    "test_keywordonlyarg",
    "test_positional_only_arg",
    "test_unpack",
    "test_exception_group",
    "test_except_star",
    "test_raise",
    "test_yield_from",
    "test_super",
    "test_scope",
    "test_sys_setprofile",
    "test_monitoring",
]
assert set(SMALL) <= set(LARGE)

SELECTIONS = {"small": SMALL, "large": LARGE}

SEP1 = "=" * 70
SEP2 = "-" * 70
FAILED = ("failure", "error")
# regrtest exit statuses that still mean "the tests ran": success, failures,
# environment changed, no tests ran.
NORMAL_EXIT = (0, 2, 3, 4)
EXIT_NO_BACKEND = 97  # sitecustomize.py: the backend was asked for and could not be enabled


@dataclasses.dataclass
class Run:
    """One `python -m test MODULE` run."""

    module: str
    mode: str  # "plain" or "backend"
    returncode: int | None = None
    seconds: float = 0.0
    result: str = ""  # regrtest's "Result:" line
    crashed: str = ""  # why the run has no (complete) results
    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)
    messages: dict[str, str] = dataclasses.field(default_factory=dict)
    warnings: list[str] = dataclasses.field(default_factory=list)
    stats: list[dict] = dataclasses.field(default_factory=list)  # backend: one per process
    directory: str = ""

    def failures(self) -> int:
        return sum(1 for o in self.outcomes.values() if o in FAILED) + (1 if self.crashed else 0)

    def compiles(self) -> int:
        return sum(s.get("stats", {}).get("compiles", 0) for s in self.stats)


@dataclasses.dataclass
class Difference:
    test: str
    plain: str
    backend: str
    message: str = ""  # the backend's (or the plain run's) failure text
    effect: str = ""  # the explaining effect's name
    note: str = ""  # a hint for the reader
    flaky: bool = False  # not seen again in the rerun


@dataclasses.dataclass
class ModuleReport:
    module: str
    plain: Run
    backend: Run
    differences: list[Difference]
    reruns: int = 0

    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if not d.effect and not d.flaky]

    def explained(self) -> list[Difference]:
        return [d for d in self.differences if d.effect]

    def flaky(self) -> list[Difference]:
        return [d for d in self.differences if d.flaky and not d.effect]

    def backend_off(self) -> bool:
        return not self.backend.crashed and self.backend.compiles() == 0

    def inconclusive(self) -> bool:
        """The plain run did not complete: there is nothing to compare against."""
        return bool(self.plain.crashed)

    def failed(self) -> bool:
        return bool(self.unexplained()) or self.backend_off() or self.inconclusive()

    def verdict(self) -> str:
        if self.inconclusive():
            return "FAIL (plain run: %s)" % self.plain.crashed
        if self.backend_off():
            return "FAIL (backend not on)"
        if self.unexplained():
            return "FAIL"
        if self.flaky():
            return "ok (flaky)"
        if self.differences:
            return "ok (explained)"
        return "ok"


# ---------------------------------------------------------------- running


def interpreter_info(python: str) -> dict:
    code = (
        "import json, platform, sys, sysconfig\n"
        "print(json.dumps({'version': '%d.%d' % sys.version_info[:2],"
        " 'full': platform.python_version(), 'implementation': platform.python_implementation(),"
        " 'gil_disabled': bool(sysconfig.get_config_var('Py_GIL_DISABLED'))}))\n"
    )
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def available_modules(python: str, modules: list[str]) -> list[str]:
    code = (
        "import importlib.util, sys\n"
        "for name in sys.argv[1:]:\n"
        "    if importlib.util.find_spec('test.' + name) is not None: print(name)\n"
    )
    out = subprocess.run([python, "-c", code, *modules], check=True, capture_output=True, text=True)
    return out.stdout.split()


EVALUATORS = {
    # --evaluator: COEXTRA_CONFORMANCE in the backend run (sitecustomize.py)
    "coextra": "1",  # lambda code: ("product", code)
    "coextra-native": "native",  # operator.itemgetter: a callback without Python frames
    "reference": "reference",  # CPython's _testinternalcapi.set_eval_frame_record, no coextra
}


def environment(mode: str, stats_dir: str | None, evaluator: str = "coextra") -> dict[str, str]:
    env = dict(os.environ)
    # Identical for both modes: only COEXTRA_CONFORMANCE differs.
    paths = [HERE, os.path.join(REPO, "python")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    for name in ("COEXTRA_CONFORMANCE", "COEXTRA_CONFORMANCE_STATS"):
        env.pop(name, None)
    if mode == "backend":
        env["COEXTRA_CONFORMANCE"] = EVALUATORS[evaluator]
        if stats_dir:
            env["COEXTRA_CONFORMANCE_STATS"] = stats_dir
    return env


def preflight(python: str, evaluator: str) -> str | None:
    """None when the backend comes up in a child process, else the reason it does not."""
    code = (
        "import sys\n"
        "from coextra import evalframe\n"
        "sys.exit(0 if evalframe.is_enabled() and evalframe.stats()['compiles'] > 0 else 1)\n"
    )
    if evaluator == "reference":
        code = "import sys; sys.exit('coextra' in sys.modules)\n"
    out = subprocess.run([python, "-c", code], env=environment("backend", None, evaluator),
                         capture_output=True, text=True)
    if out.returncode != 0:
        return (out.stderr or out.stdout).strip() or "exit status %d" % out.returncode
    out = subprocess.run([python, "-c", "import sys; sys.exit('coextra' in sys.modules)"],
                         env=environment("plain", None), capture_output=True, text=True)
    if out.returncode != 0:
        return "the plain run imports coextra: " + (out.stderr or "").strip()
    return None


RUNNING: set[int] = set()  # process groups of the module runs in progress
STOPPING = threading.Event()  # the harness is being interrupted: start nothing more


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def run_module(python: str, module: str, mode: str, root: str, timeout: float, tag: str,
               evaluator: str) -> Run:
    run = Run(module, mode)
    run.directory = directory = os.path.join(root, "%s-%s-%s" % (module, mode, tag))
    os.makedirs(directory)
    stats_dir = os.path.join(directory, "stats")
    os.makedirs(stats_dir)
    xml_path = os.path.join(directory, "junit.xml")
    out_path = os.path.join(directory, "output.txt")
    cwd = os.path.join(directory, "cwd")
    os.makedirs(cwd)
    cmd = [python, "-m", "test", "-v", "--randseed", "1", "--junit-xml", xml_path, module]
    t0 = time.monotonic()
    with open(out_path, "wb") as out:
        # Its own session: a timeout or an interrupted harness kills the run with
        # every process it started.
        proc = subprocess.Popen(cmd, cwd=cwd, env=environment(mode, stats_dir, evaluator), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        RUNNING.add(proc.pid)
        if STOPPING.is_set():
            kill_group(proc.pid)
        try:
            run.returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.wait()
            run.crashed = "timed out after %d s" % timeout
        finally:
            RUNNING.discard(proc.pid)
    run.seconds = time.monotonic() - t0
    with open(out_path, encoding="utf-8", errors="replace") as f:
        output = f.read()
    parse_results(run, xml_path, output)
    if mode == "backend":
        for name in sorted(os.listdir(stats_dir)):
            try:
                with open(os.path.join(stats_dir, name)) as f:
                    run.stats.append(json.load(f))
            except (OSError, ValueError):
                pass
    shutil.rmtree(cwd, ignore_errors=True)
    return run


# ---------------------------------------------------------------- parsing

_ID_IN_PARENS = re.compile(r"^(\S+) \(([^()\s]+)\)")


def normalize(name: str) -> str:
    """One id per test: 'test.m.C.t' for 't (test.m.C.t)', 't (test.m.C)' (3.10),
    'setUpClass (test.m.C)', and subtests 'test.m.C.t (i=1)'."""
    m = _ID_IN_PARENS.match(name)
    if m:
        short, inner = m.groups()
        if "." in short:  # a subtest's id: the test's id, then its description
            return short
        if inner == short or inner.endswith("." + short):
            return inner
        return inner + "." + short
    return name.split(" ", 1)[0] if " (" in name and "." in name.split(" ", 1)[0] else name


def _text(element: ET.Element) -> str:
    parts = [element.get("type", ""), element.get("message", ""), element.text or ""]
    return "\n".join(p for p in parts if p).strip()


RANK = {"pass": 0, "xfail": 0, "skip": 0, "uxsuccess": 1, "failure": 2, "error": 3}


def record(run: Run, test: str, outcome: str, message: str = "") -> None:
    old = run.outcomes.get(test)
    # A test reported more than once (subtests): keep the worst outcome.
    if old is None or RANK[outcome] > RANK[old] or (old == "pass" and outcome == "skip"):
        run.outcomes[test] = outcome
        if message:
            run.messages[test] = message
    elif message and test not in run.messages:
        run.messages[test] = message


def parse_results(run: Run, xml_path: str, output: str) -> None:
    if os.path.exists(xml_path):
        try:
            root = ET.parse(xml_path).getroot()
        except ET.ParseError as exc:
            run.crashed = run.crashed or "unreadable JUnit XML: %s" % exc
            root = None
        if root is not None:
            for case in root.iter("testcase"):
                name = case.get("name")
                if not name:
                    continue  # a test whose subtests failed: found in the output below
                test = normalize(name)
                if case.find("error") is not None:
                    record(run, test, "error", _text(case.find("error")))
                elif case.find("failure") is not None:
                    record(run, test, "failure", _text(case.find("failure")))
                elif case.find("skipped") is not None:
                    record(run, test, "skip", (case.find("skipped").text or "").strip())
                elif case.find("output") is not None:
                    record(run, test, "xfail")
                elif case.get("outcome") == "UNEXPECTED_SUCCESS" or case.find("outcome") is not None:
                    record(run, test, "uxsuccess")
                else:
                    record(run, test, "pass")
    elif not run.crashed:
        run.crashed = "no JUnit XML (exit status %s)" % run.returncode
    # unittest's error report: "====\nFAIL: t (id) [subtest]\n----\n<traceback>".
    lines = output.splitlines()
    i = 0
    while i < len(lines) - 1:
        if lines[i] == SEP1:
            m = re.match(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (.*)$", lines[i + 1])
            if m:
                kind, description = m.groups()
                body = []
                j = i + 2
                while j < len(lines) and lines[j] != SEP1 and not re.match(r"^Ran \d+ tests? in ", lines[j]):
                    body.append(lines[j])
                    j += 1
                while body and body[-1] in (SEP2, ""):
                    body.pop()
                if body and body[0] == SEP2:
                    body = body[1:]
                outcome = {"FAIL": "failure", "ERROR": "error"}.get(kind, "uxsuccess")
                record(run, normalize(description), outcome, "\n".join(body).strip())
                i = j
                continue
        i += 1
    results = re.findall(r"^(?:== )?(?:Tests )?[Rr]esult: ([A-Z][A-Z ,_]*[A-Z])", output, re.M)
    run.result = results[-1] if results else ""
    run.warnings = sorted(set(re.findall(r"^Warning -- (.*)$", output, re.M)))[:20]
    if not run.crashed and run.returncode not in NORMAL_EXIT:
        run.crashed = "exit status %s" % run.returncode
    if run.crashed:
        tail = output.strip().splitlines()[-15:]
        run.messages["<module>"] = "\n".join(tail)


# ---------------------------------------------------------------- comparing


def compare(plain: Run, backend: Run, version: str, effects: list) -> list[Difference]:
    diffs = []
    for test in sorted(set(plain.outcomes) | set(backend.outcomes)):
        p = plain.outcomes.get(test, "absent")
        b = backend.outcomes.get(test, "absent")
        if p == b:
            continue
        if "absent" in (p, b) and (plain.crashed or backend.crashed):
            continue  # covered by the module-level difference below
        message = backend.messages.get(test) or plain.messages.get(test, "")
        diffs.append(Difference(test, p, b, message))
    process = plain.module + "::process"  # the run as a whole: exit status, regrtest's verdict
    if plain.crashed != backend.crashed and (plain.crashed or backend.crashed):
        diffs.append(Difference(process, plain.crashed or "ran", backend.crashed or "ran",
                                backend.messages.get("<module>") or plain.messages.get("<module>", "")))
    elif not diffs and plain.result != backend.result:
        # Same per-test outcomes, different verdict: ENV CHANGED and the like.
        message = "; ".join(backend.warnings or plain.warnings)
        diffs.append(Difference(process, plain.result or "?", backend.result or "?", message))
    for d in diffs:
        effect = effects_module.explain(effects, version, d.test, d.plain, d.backend, d.message)
        if effect is not None:
            d.effect = effect.name
        elif re.search(r"exit status %d\b|Refusing to run without it" % EXIT_NO_BACKEND, d.message):
            d.note = ("a process could not enable coextra (sitecustomize.py, status %d): "
                      "was the extension rebuilt during the run?" % EXIT_NO_BACKEND)
    return diffs


# ---------------------------------------------------------------- reporting


def table_rows(reports: list[ModuleReport]) -> list[list[str]]:
    rows = []
    for r in reports:
        tests = len(set(r.plain.outcomes) | set(r.backend.outcomes))
        flaky = len(r.flaky())
        rows.append([
            r.module,
            str(tests),
            str(r.plain.failures()) + (" (%s)" % r.plain.crashed if r.plain.crashed else ""),
            str(r.backend.failures()) + (" (%s)" % r.backend.crashed if r.backend.crashed else ""),
            str(len(r.differences)) + (" (%d flaky)" % flaky if flaky else ""),
            str(len(r.explained())),
            r.verdict(),
        ])
    return rows


HEADER = ["module", "tests", "plain failures", "backend failures", "differences",
          "explained-by-effect", "verdict"]


def text_table(rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(HEADER)]
    fmt = " | ".join("%%-%ds" % w for w in widths)
    lines = [fmt % tuple(HEADER), "-+-".join("-" * w for w in widths)]
    lines += [fmt % tuple(r) for r in rows]
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join(["---"] + ["---:"] * 5 + ["---"]) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def first_line(message: str, limit: int = 160) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    # A fatal error, else the exception line of a traceback: more telling than
    # its first frame.
    pick = next((line for line in lines if line.startswith("Fatal Python error")), None)
    if pick is None:
        pick = next((line for line in reversed(lines)
                     if re.match(r"^[\w.]+(Error|Exception|Exit|Warning)\b", line)),
                    lines[-1] if lines else "")
    return pick[:limit]


def difference_lines(reports: list[ModuleReport], markdown: bool) -> list[str]:
    """Unexplained and flaky differences one per line, with their failure; explained
    ones grouped by effect."""
    out = []
    explained: dict[str, list[Difference]] = {}
    for r in reports:
        for d in r.differences:
            if d.effect:
                explained.setdefault(d.effect, []).append(d)
                continue
            status = "flaky (not in the rerun)" if d.flaky else "UNEXPLAINED"
            if markdown:
                out.append("- `%s`: plain %s, backend %s; **%s**. `%s`%s" % (
                    d.test, d.plain, d.backend, status, first_line(d.message).replace("`", "'"),
                    " (%s)" % d.note if d.note else ""))
            else:
                out.append("  %s: plain %s -> backend %s [%s]" % (d.test, d.plain, d.backend, status))
                if d.message:
                    out.append("      " + first_line(d.message))
                if d.note:
                    out.append("      note: " + d.note)
    for effect, diffs in explained.items():
        shown = diffs if len(diffs) <= 6 else diffs[:4]
        more = "" if len(diffs) <= 6 else ", and %d more" % (len(diffs) - len(shown))
        if markdown:
            tests = ", ".join("`%s` (%s)" % (d.test, d.backend) for d in shown)
            out.append("- explained by %s (%d): %s%s" % (effect, len(diffs), tests, more))
        else:
            out.append("  explained by %s (%d):" % (effect, len(diffs)))
            out += ["      %s: plain %s -> backend %s" % (d.test, d.plain, d.backend) for d in shown]
            if more:
                out.append("      ..." + more[1:])
    return out


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--selection", choices=sorted(SELECTIONS), default="small")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2,
                        help="module runs at a time (default: the number of CPUs)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter under test (default: this one)")
    parser.add_argument("--modules", nargs="+", metavar="MODULE",
                        help="run these test modules instead of a selection")
    parser.add_argument("--reruns", type=int, default=1,
                        help="run modules with unexplained differences again this many times; "
                             "a difference that does not come back is flaky (default: 1)")
    parser.add_argument("--timeout", type=float, default=1200.0,
                        help="seconds one module run may take (default: 1200)")
    parser.add_argument("--evaluator", choices=sorted(EVALUATORS), default="coextra",
                        help="the second run's: coextra.evalframe with the callback "
                             "lambda code: ('product', code) (default); coextra-native: with "
                             "operator.itemgetter, a C callback no tracer or profiler sees; "
                             "reference: CPython's own test evaluator "
                             "(_testinternalcapi.set_eval_frame_record, 3.11+) instead of "
                             "coextra, to check that a difference is inherent to PEP 523")
    parser.add_argument("--memory-limit", type=float, default=6.0, metavar="GIB",
                        help="address-space limit of each test process, in GiB; 0: none (default: 6)")
    parser.add_argument("--markdown", metavar="FILE", help="also write the report as markdown to FILE")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep every run's output, JUnit XML and stats under DIR")
    args = parser.parse_args(argv)

    t_start = time.monotonic()
    # Test processes get the default signal dispositions, however the harness was
    # started: a SIGINT ignored by a background shell job would be inherited, and
    # tests that interrupt themselves (_thread.interrupt_main()) then hang.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) is signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    python = args.python
    info = interpreter_info(python)
    version = info["version"]
    if info["implementation"] != "CPython" or info["gil_disabled"]:
        print("conformance: %s is not a default-build CPython; coextra does not support it" % python)
        return 2
    wanted = args.modules or SELECTIONS[args.selection]
    modules = available_modules(python, wanted)
    missing = [m for m in wanted if m not in modules]
    effects = effects_module.for_version(version)
    label = "modules " + " ".join(args.modules) if args.modules else "selection " + args.selection
    if args.evaluator != "coextra":
        label += ", evaluator " + args.evaluator
    print("conformance: CPython %s (%s), %s: %d modules, %d jobs, %d effects apply to %s" % (
        info["full"], python, label, len(modules), args.jobs, len(effects), version))
    if missing:
        print("conformance: not in this version's test package: " + " ".join(missing))
    problem = preflight(python, args.evaluator)
    if problem:
        print("conformance: the backend does not come up in a child process:\n" + problem)
        return 2

    if args.memory_limit > 0:
        # Inherited by every test process: a runaway test fails alone instead of
        # bringing the OOM killer onto its neighbours (the other run, a build).
        limit = int(args.memory_limit * 2**30)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    root = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="coextra-conformance-")
    os.makedirs(root, exist_ok=True)
    jobs = max(1, args.jobs)

    def run_pairs(names: list[str], tag: str) -> dict[str, tuple[Run, Run]]:
        results: dict[tuple[str, str], Run] = {}
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            # A module's two runs side by side: they meet the same machine load.
            futures = {pool.submit(run_module, python, m, mode, root, args.timeout, tag,
                                   args.evaluator): (m, mode)
                       for m in names for mode in ("plain", "backend")}
            try:
                for future in concurrent.futures.as_completed(futures):
                    run = future.result()
                    results[futures[future]] = run
                    extra = ""
                    if run.mode == "backend":
                        extra = ", %d processes, %d compiles" % (len(run.stats), run.compiles())
                    print("  %-24s %-7s %6.1f s  %-14s %d tests, %d failed%s%s" % (
                        run.module, run.mode, run.seconds, run.result or "-", len(run.outcomes),
                        run.failures(), extra, (" [%s]" % run.crashed) if run.crashed else ""),
                        flush=True)
            except BaseException:  # KeyboardInterrupt, SIGTERM: leave nothing running
                STOPPING.set()
                for future in futures:
                    future.cancel()
                for pgid in list(RUNNING):
                    kill_group(pgid)
                raise
        return {m: (results[(m, "plain")], results[(m, "backend")]) for m in names}

    reports = []
    for module, (plain, backend) in run_pairs(modules, "1").items():
        reports.append(ModuleReport(module, plain, backend, compare(plain, backend, version, effects)))

    for attempt in range(2, args.reruns + 2):
        again = [r for r in reports if r.unexplained() or r.inconclusive()]
        if not again:
            break
        print("conformance: running again (%d): %s" % (attempt, " ".join(r.module for r in again)))
        rerun = run_pairs([r.module for r in again], str(attempt))
        for i, r in enumerate(reports):
            if r not in again:
                continue
            plain, backend = rerun[r.module]
            diffs = compare(plain, backend, version, effects)
            if r.inconclusive():
                # Nothing to compare against the first time: the new pair replaces it.
                reports[i] = ModuleReport(r.module, plain, backend, diffs, r.reruns + 1)
                continue
            r.reruns += 1
            seen = {d.test for d in diffs}
            for d in r.unexplained():
                if d.test not in seen:
                    d.flaky = True

    reports.sort(key=lambda r: r.module)
    rows = table_rows(reports)
    elapsed = time.monotonic() - t_start
    print()
    print(text_table(rows))
    lines = difference_lines(reports, markdown=False)
    if lines:
        print("\ndifferences:")
        print("\n".join(lines))
    processes = sum(len(r.backend.stats) for r in reports)
    compiles = sum(r.backend.compiles() for r in reports)
    off = [r.module for r in reports if r.backend_off()]
    print("\nbackend: %d processes reported stats, %d compiles in all; off in: %s" % (
        processes, compiles, " ".join(off) or "none"))
    unexplained = sum(len(r.unexplained()) for r in reports)
    explained = sum(len(r.explained()) for r in reports)
    flaky = sum(len(r.flaky()) for r in reports)
    inconclusive = [r.module for r in reports if r.inconclusive()]
    failing = [r.module for r in reports if r.failed()]
    summary = ("CPython %s, %s: %d modules, %d differences: %d explained, %d flaky, %d unexplained; %.0f s" % (
        info["full"], label, len(reports), explained + flaky + unexplained, explained, flaky,
        unexplained, elapsed))
    if inconclusive:
        print("plain run did not complete (no comparison): " + " ".join(inconclusive))
    print(summary)
    print("conformance: %s" % ("FAILED: " + " ".join(failing) if failing else "passed"))

    if args.markdown:
        md = ["## CPython %s, %s" % (info["full"], label), "",
              markdown_table(rows), "",
              "%d differences: %d explained by an effect, %d flaky, %d unexplained. "
              "Backend: %d processes reported stats, %d compiles. %d jobs, %.0f s." % (
                  explained + flaky + unexplained, explained, flaky, unexplained, processes,
                  compiles, jobs, elapsed)]
        if missing:
            md += ["", "Not in this version's test package: " + ", ".join(missing) + "."]
        if inconclusive:
            md += ["", "The plain run did not complete (no comparison): " + ", ".join(inconclusive) + "."]
        md_lines = difference_lines(reports, markdown=True)
        if md_lines:
            md += ["", "Differences:", ""] + md_lines
        with open(args.markdown, "w") as f:
            f.write("\n".join(md) + "\n")
    if not args.keep and not failing:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print("conformance: outputs kept in " + root)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
