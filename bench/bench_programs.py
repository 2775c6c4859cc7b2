"""The evalframe backend's overhead on real programs: pyperformance's.

richards, deltablue, nbody, raytrace, generators and json_dumps, as the
pyperformance package ships them (bench/programs/pyperformance_programs.py
loads them from it), each timed by pyperf's Runner under three configurations,
side by side in one run:

  (a) no PEP 523 hook,
  (b) the minimal raw hook of tests/capi_ext (_capi_bench.raw_hook_enable()):
      it reads one raw co_extra pointer of the frame's code and runs the frame
      with the previous evaluator,
  (c) coextra.evalframe with every frame a hit: enabled with a callback that
      returns a product, after a run that gave every code object the program
      runs an entry; the timed runs check that no callback runs then.

Each configuration of each program is one pyperf benchmark per round
("richards (b) raw co_extra hook, round 2"): every program under each
configuration in turn, round after round, the order of the configurations
rotating. The ratios are the medians over the rounds of the ratios within a
round (whose configurations run seconds apart): a change in the machine's load
between rounds leaves them alone.
pyperf's worker processes enable the configuration around their timed runs and
check every run's result. Before the workers start, this process checks every
program once under each configuration: the result must pass the program's
check without a hook and be the same under (b) and (c). --quick does only that
check pass (one run per configuration, for `make test`). Reported per program: the time per run of each configuration, (c)/(b)
(the backend against the cheapest possible hook; target <= 1.05) and (b)/(a)
(what any PEP 523 hook costs on CPython: docs/stress-and-benchmarks.md,
"Overhead on real programs"). Nothing about the timings is asserted.

    PYTHONPATH=python python bench/bench_programs.py [--quick] [--programs richards,nbody,...]
        [--rounds N] [--json FILE] [pyperf's options: -p PROCESSES per round, -n VALUES, -o FILE, ...]

Needs the test extensions built by CMake (make build) in tests/python/_ext and
the bench extra (pyperformance); without pyperformance it says so and exits 0.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python", "_ext"))

from programs import pyperformance_programs as library  # noqa: E402

CONFIGS = {
    "a": "(a) no hook",
    "b": "(b) raw co_extra hook",
    "c": "(c) coextra.evalframe, all hits",
}
# Worker processes per configuration of each program: PROCESSES in each of
# ROUNDS rounds (pyperf's default is 20 processes; -p, --fast and --rigorous
# change PROCESSES, --rounds ROUNDS). More rounds rather than more processes
# per round: the ratios are medians over the rounds.
PROCESSES = 1
ROUNDS = 9


def compile_all(code):
    return ("compiled", code)


def switches(config: str):
    """(enable, disable) of a configuration."""
    import _capi_bench

    from coextra import evalframe

    return {
        "a": (lambda: None, lambda: None),
        "b": (_capi_bench.raw_hook_enable, _capi_bench.raw_hook_disable),
        "c": (lambda: evalframe.enable(compile_all), evalframe.disable),
    }[config]


def run_under(config: str, program: library.Program) -> tuple[float, Any]:
    enable, disable = switches(config)
    gc.collect()  # every run starts from the same heap state; outside the timing
    enable()
    try:
        return program.run()
    finally:
        disable()


def all_hits(before: dict, after: dict) -> dict:
    """The evalframe counters between two stats(); asserts no callback ran."""
    delta = {key: after[key] - before[key] for key in after}
    assert delta["compiles"] == 0 and delta["hits"] == delta["frames"] > 0, delta
    return delta


def check_pass(programs: list[library.Program]) -> dict[str, dict]:
    """Each program without a hook (its check must pass), then under each
    configuration (the same result), then once more under (c), which must be
    all hits: {name: {"frames": per run, "seconds": {config: one run}}}."""
    from coextra import evalframe

    checked: dict[str, dict] = {}
    for program in programs:
        reference = run_under("a", program)[1]
        assert program.check(reference), (program.name, "wrong result", reference)
        seconds = {}
        for config in CONFIGS:
            seconds[config], result = run_under(config, program)
            assert result == reference, (program.name, config, result, reference)
        before = evalframe.stats()
        seconds["c"], result = run_under("c", program)
        assert result == reference, (program.name, "c", result, reference)
        frames = all_hits(before, evalframe.stats())["frames"]
        checked[program.name] = {"frames": frames, "seconds": seconds}
    return checked


WARMED_UP: set[str] = set()


def time_runs(loops: int, name: str, config: str) -> float:
    """pyperf's time function, in a worker: `loops` runs under `config`, every
    result checked; under (c), the first call gives every code object its
    entry in an untimed run, and the timed runs must be all hits."""
    from coextra import evalframe

    program = next(p for p in library.PROGRAMS if p.name == name)
    if config == "c" and name not in WARMED_UP:
        assert program.check(run_under("c", program)[1]), (name, "wrong result under (c)")
        WARMED_UP.add(name)
    enable, disable = switches(config)
    results = []
    total = 0.0
    gc.collect()
    before = evalframe.stats()
    enable()
    try:
        for _ in range(loops):
            elapsed, result = program.run()
            total += elapsed
            results.append(result)
    finally:
        disable()
    if config == "c":
        all_hits(before, evalframe.stats())
    for result in results:
        assert program.check(result), (name, config, "wrong result", result)
    return total


def measure(runner, programs: list[library.Program], rounds: int) -> dict[str, dict[str, list[list[float]]]]:
    """pyperf's values of each configuration of each program, round by round
    ({name: {config: [[seconds per run] per round]}}); in a worker, the one
    benchmark its task names, and nothing returned.

    Every program under each configuration in turn, round after round, the
    order of the configurations rotating from round to round: a change in the
    machine's load hits each configuration alike. Each is one pyperf benchmark
    per round, its loops calibrated in the first round and kept (pyperf would
    otherwise keep the first benchmark's for all: its manager stores the
    calibration in the runner's arguments).
    """
    args = runner.args
    given_loops = args.loops
    calibrated: dict[tuple[str, str], int] = {}
    values: dict[str, dict[str, list[list[float]]]] = {p.name: {c: [] for c in CONFIGS} for p in programs}
    order = list(CONFIGS)
    for round_index in range(rounds):
        shift = round_index % len(order)
        for program in programs:
            for config in order[shift:] + order[:shift]:
                args.loops = given_loops or calibrated.get((program.name, config), 0)
                bench = runner.bench_time_func(f"{program.name} {CONFIGS[config]}, round {round_index + 1}",
                                               time_runs, program.name, config)
                if bench is not None and not args.worker:
                    calibrated[(program.name, config)] = bench.get_loops()
                    values[program.name][config].append(list(bench.get_values()))
    return values


def seconds_per_run(rounds: dict[str, list[list[float]]]) -> dict[str, float]:
    """(b)'s median over the rounds of its medians in each, and (a) and (c) as
    (b)'s times their median ratio to (b) within a round: the configurations
    of a round run within seconds of each other, so that a change in the
    machine's load from one round to the next leaves the ratios alone."""
    medians = [{c: statistics.median(rounds[c][r]) for c in CONFIGS} for r in range(len(rounds["b"]))]
    b = statistics.median(m["b"] for m in medians)
    return {c: b * statistics.median(m[c] / m["b"] for m in medians) for c in CONFIGS}


def extension_info(module) -> dict:
    """Which build was measured (the extensions are rebuilt often)."""
    path = module.__file__
    mtime = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(os.path.getmtime(path)))
    return {"path": os.path.relpath(path), "mtime": mtime, "bytes": os.path.getsize(path)}


def table(rows: list[dict]) -> list[str]:
    lines = ["| program | frames/run | (a) no hook ms | (b) raw hook ms | (c) evalframe ms "
             "| (b)/(a) | (c)/(b) | (c)-(b) ns/frame |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        ms = row["median_ms"]
        # Per frame only where frames are what the program does: at least one per µs.
        dense = row["frames_per_run"] >= ms["b"] * 1e3
        per_frame = f"{row['ns_per_frame_c_minus_b']:.1f}" if dense else "-"
        lines.append(f"| {row['program']} | {row['frames_per_run']:,} | {ms['a']:.1f} | {ms['b']:.1f} | "
                     f"{ms['c']:.1f} | {row['ratio_b_over_a']:.2f} | **{row['ratio_c_over_b']:.3f}** | "
                     f"{per_frame} |")
    return lines


def row_of(program: library.Program, frames: int, seconds: dict[str, float]) -> dict:
    return {
        "program": program.name,
        "checked": program.what,
        "frames_per_run": frames,
        "median_ms": {c: seconds[c] * 1e3 for c in CONFIGS},
        "ratio_b_over_a": seconds["b"] / seconds["a"],
        "ratio_c_over_b": seconds["c"] / seconds["b"],
        "ratio_c_over_a": seconds["c"] / seconds["a"],
        "ns_per_frame_b_minus_a": (seconds["b"] - seconds["a"]) / frames * 1e9,
        "ns_per_frame_c_minus_b": (seconds["c"] - seconds["b"]) / frames * 1e9,
    }


def summary(how: str, rows: list[dict], **extra: Any) -> dict:
    """The summary format scripts/bench_summary.py merges (make bench)."""
    groups = [{"title": f"{row['program']} ({row['frames_per_run']:,} frames): median per run",
               "unit": "ms", "reference": CONFIGS["b"],
               "results": {CONFIGS[c]: row["median_ms"][c] for c in CONFIGS}}
              for row in rows]
    # Ratios in %: the summary prints check values to one decimal.
    checks = [{"what": f"{row['program']}: (c) over (b) in % (target <= 5)",
               "value": (row["ratio_c_over_b"] - 1) * 100,
               "passed": row["ratio_c_over_b"] <= 1.05} for row in rows]
    return {"suite": "bench_programs.py", "python": sys.version.split()[0], "how": how,
            "groups": groups, "checks": checks, "configs": CONFIGS, "rows": rows, **extra}


def write_json(path: str | None, data: dict) -> None:
    if path:
        with open(path, "w") as fh:
            json.dump(data, fh, indent=2)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="only check every program once under each configuration (a smoke test)")
    parser.add_argument("--programs", default=None,
                        help="comma-separated subset of: " + ",".join(p.name for p in library.PROGRAMS))
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"interleaved rounds, each of -p worker processes per configuration (default {ROUNDS})")
    parser.add_argument("--json", help="also write the results to this file")


def pass_to_workers(cmd: list[str], args: argparse.Namespace) -> None:
    # The workers must register the same benchmarks in the same order.
    cmd.extend(("--rounds", str(args.rounds)))
    if args.programs:
        cmd.extend(("--programs", args.programs))


def selected(parser: argparse.ArgumentParser, names: str | None) -> list[library.Program]:
    if not names:
        return library.PROGRAMS
    wanted = names.split(",")
    unknown = set(wanted) - {p.name for p in library.PROGRAMS}
    if unknown:
        parser.error(f"unknown programs: {', '.join(sorted(unknown))}")
    return [p for p in library.PROGRAMS if p.name in wanted]


def skip(reason: str) -> int:
    # Only --json is needed to report the skip; pyperf may be what is missing.
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    args, _ = parser.parse_known_args()
    print(f"bench_programs.py: skipped: {reason}")
    write_json(args.json, {"suite": "bench_programs.py", "python": sys.version.split()[0],
                           "how": f"skipped: {reason}", "groups": []})
    return 0


def main() -> int:
    reason = library.missing()
    if reason:
        return skip(reason)

    import _capi_bench
    import pyperf

    import coextra
    from coextra import _coextra

    runner = pyperf.Runner(processes=PROCESSES, add_cmdline_args=pass_to_workers)
    add_arguments(runner.argparser)
    args = runner.parse_args()
    programs = selected(runner.argparser, args.programs)

    if args.worker:
        measure(runner, programs, args.rounds)
        return 0

    started = time.perf_counter()
    checked = check_pass(programs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    info = {"extensions": {m.__name__: extension_info(m) for m in (_coextra, _capi_bench)},
            "pyperformance": str(library.benchmarks_dir()), "load_average": load}
    if args.quick:
        rows = [row_of(p, checked[p.name]["frames"], checked[p.name]["seconds"]) for p in programs]
        print(f"Python {sys.version.split()[0]}; every program's result checked without a hook, "
              f"the same under (b) and (c), (c) all hits ({time.perf_counter() - started:.0f} s, "
              f"load average {load:.1f}). One run each, a smoke test, not a measurement:\n")
        print("\n".join(table(rows)))
        write_json(args.json, summary("one run per configuration (--quick): not a measurement", rows, **info))
        coextra.reset()
        return 0

    values = measure(runner, programs, args.rounds)
    rows = [row_of(p, checked[p.name]["frames"], seconds_per_run(values[p.name])) for p in programs]
    how = (f"{args.rounds} interleaved rounds x {args.processes} pyperf worker "
           f"process{'es' if args.processes != 1 else ''} x {args.values} "
           f"values per configuration; (b): the median of its medians per round, (a) and (c): (b) times "
           f"their median ratio to (b) in a round")
    print(f"\nPython {sys.version.split()[0]}; {how} ({time.perf_counter() - started:.0f} s, "
          f"load average {load:.1f} at the start on {os.cpu_count()} CPUs); every result checked; "
          f"(c) all hits in every worker\n")
    print("\n".join(table(rows)))
    worst = max(rows, key=lambda row: row["ratio_c_over_b"])
    over = [row["program"] for row in rows if row["ratio_c_over_b"] > 1.05]
    print(f"\n(c)/(b): worst {worst['ratio_c_over_b']:.3f} ({worst['program']}), target <= 1.05"
          + (f"; over the target: {', '.join(over)}" if over else "; met by every program"))
    write_json(args.json, summary(how, rows, seconds=values, **info))
    coextra.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
