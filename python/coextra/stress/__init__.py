"""coextra's stress demo: thousands of compiled functions, three stores side by side.

    python -m coextra.stress [-n 10000] [--waves 10] [--stores naive,weakkeydict,coextra]
                             [--json] [--plot FILE.svg]

Each wave compiles n/waves new functions (exec'd sources, closures, lambdas,
methods of classes created at run time), runs each twice through a backend whose
products reference their own code (coextra/stress/_workload.py), then drops every
reference the program holds to them. After each wave the store is measured:
code objects still alive (weak references to every code object compiled),
RSS and peak RSS, time, and time spent in gc.collect() and in coextra's collector.

Compilation goes through the PEP 523 backend (coextra.evalframe.enabled).
coextra relies on automatic collection alone, as a program that never calls
coextra.collect() does; --collect-every-wave adds an explicit pass per wave.

Each store runs in its own child process, so RSS, peak RSS and leftovers of one
store never reach the next.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import weakref
from typing import Any, Optional

from . import _memory, _workload

def notes(collect_every_wave: bool = False) -> dict[str, str]:
    return {
        "compilation": "through the evalframe backend (PEP 523): coextra.evalframe.enabled(callback)",
        "collector": ("coextra.collect() after gc.collect() in every wave, besides automatic runs"
                      if collect_every_wave else "automatic collection only (gc.callbacks)"),
    }


# ---------------------------------------------------------------------------
# The child process: one store, every wave.


def _run_calls(calls: list, store: Any, backend: _workload.Backend) -> None:
    """Runs every function twice through the evalframe backend; the first call
    compiles and stores, the second hits.

    Frames captured in products keep this frame (their caller) alive, with the
    locals it has when it returns: so it drops every local before returning.
    """
    from coextra import evalframe

    returns_product = store.name == "coextra"

    def on_miss(code: Any) -> Optional[Any]:
        # The backend sees every frame without an entry; only its own code compiles.
        if not backend.knows(code):
            return None
        if returns_product:
            return backend.compile(code)  # evalframe stores it with coextra
        if store.get(code) is None:
            store.put(code, backend.compile(code))
        return None

    with evalframe.enabled(on_miss):
        for call, code in calls:
            call(1)
            call(2)
    on_miss = None
    call = code = calls = store = backend = None


class CollectorClock:
    """Adds up coextra's own timing of every collector run, explicit or automatic.

    Automatic runs happen inside gc.collect() (from gc.callbacks), where no
    wall clock around coextra.collect() can see them; a gc "stop" callback reads
    stats() after every garbage collection instead. When several runs happened
    between two readings, each is counted at the last one's time.
    """

    def __init__(self, stats: Any) -> None:
        self._stats = stats
        self._seen = stats()["collections"]
        self.seconds = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "stop":
            self.poll()

    def poll(self) -> float:
        current = self._stats()
        new = current["collections"] - self._seen
        if new > 0:
            self.seconds += current["last_seconds"] * new
            self._seen = current["collections"]
        return self.seconds

    def close(self) -> None:
        gc.callbacks.remove(self._on_gc)


def _measure(wave: int, compiled: int, refs: list, started: float, gc_seconds: float,
             collector_seconds: float, detached: int) -> dict:
    return {
        "wave": wave,
        "compiled": compiled,
        "live_code_objects": sum(ref() is not None for ref in refs),
        "rss_bytes": _memory.rss_bytes(),
        "peak_rss_bytes": _memory.peak_rss_bytes(),
        "seconds": time.perf_counter() - started,
        "gc_seconds": gc_seconds,
        "collector_seconds": collector_seconds,
        "detached_by_collect": detached,
    }


def run_worker(store_name: str, functions: int, waves: int, payload: int,
               collect_every_wave: bool = False) -> int:
    """Runs one store and prints one JSON line per wave, then a final line."""
    import coextra
    from coextra import evalframe

    store = _workload.STORES[store_name]()
    backend = _workload.Backend(payload)
    # By default coextra relies on automatic collection alone, as a user who
    # never calls collect() does; --collect-every-wave adds explicit passes.
    collect = coextra.collect if store_name == "coextra" and collect_every_wave else None
    clock = CollectorClock(coextra.stats) if store_name == "coextra" and "last_seconds" in coextra.stats() else None
    refs: list = []
    emit = lambda record: print(json.dumps(record), flush=True)  # noqa: E731

    gc.collect()
    started = time.perf_counter()
    emit({"event": "wave", **_measure(0, 0, refs, started, 0.0, 0.0, 0)})
    gc_total = collector_total = 0.0
    detached_total = 0
    per_wave = [functions // waves + (1 if w < functions % waves else 0) for w in range(waves)]
    index = 0
    clock_mark = 0.0
    for wave, count in enumerate(per_wave, start=1):
        calls = []
        for i in range(index, index + count):
            function, call = _workload.make_function(_workload.KINDS[i % len(_workload.KINDS)], i)
            backend.register(function)
            refs.append(weakref.ref(function.__code__))
            calls.append((call, function.__code__))
        index += count
        del function, call
        _run_calls(calls, store, backend)
        del calls  # the program drops every function of this wave

        t = time.perf_counter()
        gc.collect()
        gc_seconds = time.perf_counter() - t
        collector_seconds, detached = 0.0, 0
        if collect is not None:
            t = time.perf_counter()
            detached = collect()
            collector_seconds = time.perf_counter() - t
            t = time.perf_counter()
            gc.collect()  # what the detached holders kept alive is ordinary cyclic garbage now
            gc_seconds += time.perf_counter() - t
        if clock is not None:  # this wave's runs, automatic ones included
            collector_seconds = clock.poll() - clock_mark
            clock_mark = clock.seconds
        gc_total += gc_seconds
        collector_total += collector_seconds
        detached_total += detached
        emit({"event": "wave", **_measure(wave, index, refs, started, gc_seconds, collector_seconds, detached)})

    if clock is not None:
        clock.close()
    final = _measure(waves, index, refs, started, gc_total, collector_total, detached_total)
    final["products_compiled"] = backend.compiled
    stats = dict(coextra.stats())
    if store_name == "coextra":
        final["coextra_stats"] = stats
        # The control: detach every holder by hand. If the code objects go now,
        # nothing but their own caches kept them alive.
        coextra.reset()
        gc.collect()
        final["live_after_reset"] = sum(ref() is not None for ref in refs)
    final["evalframe_stats"] = dict(evalframe.stats())
    emit({"event": "done", **final})
    return 0


# ---------------------------------------------------------------------------
# The parent: one child per store, a progress bar, the table, the JSON, the plot.


class Progress:
    """A tqdm bar per store on a terminal when tqdm is installed (the demo's
    extra, coextra[demo]), plain lines otherwise."""

    def __init__(self, stream: Any, total_waves: int) -> None:
        self.stream = stream
        self.total = total_waves
        self.bars: dict[str, Any] = {}
        self.tqdm = None
        if stream.isatty():
            try:
                from tqdm import tqdm

                self.tqdm = tqdm
            except ImportError:
                pass

    def update(self, label: str, record: dict) -> None:
        wave, live = record["wave"], record["live_code_objects"]
        rss = _mib(record["rss_bytes"])
        if self.tqdm is not None:
            bar = self.bars.get(label)
            if bar is None:
                bar = self.bars[label] = self.tqdm(total=self.total, desc=f"  {label}", unit="wave",
                                                   file=self.stream, leave=True)
            bar.set_postfix_str(f"live code objects {live}, RSS {rss} MiB", refresh=False)
            bar.update(wave - bar.n)
            if wave == self.total:
                bar.close()
        elif wave > 0:
            self.stream.write(f"  {label}: wave {wave}/{self.total}: live code objects {live}, RSS {rss} MiB\n")
            self.stream.flush()


def _mib(value: Optional[int]) -> str:
    return "n/a" if value is None else f"{value / 2**20:.1f}"


def _child_env() -> dict:
    env = dict(os.environ)
    # The directory that holds the coextra package (this file is coextra/stress/__init__.py).
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    return env


def run_store(store: str, args: argparse.Namespace, progress: Progress) -> dict:
    command = [sys.executable, "-m", "coextra.stress", "--worker", store, "-n", str(args.functions),
               "--waves", str(args.waves), "--payload", str(args.payload)]
    if args.collect_every_wave:
        command.append("--collect-every-wave")
    label = _workload.STORES[store].label
    waves: list[dict] = []
    final: Optional[dict] = None
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=_child_env()) as child:
        assert child.stdout is not None
        for line in child.stdout:
            record = json.loads(line)
            event = record.pop("event")
            if event == "wave":
                waves.append(record)
                progress.update(label, record)
            elif event == "done":
                final = record
    if child.returncode != 0 or final is None:
        raise RuntimeError(f"the {store} store's child process failed (exit status {child.returncode})")
    return {"label": label, "waves": waves, "final": final}


def format_table(result: dict) -> str:
    config = result["config"]
    n = config["functions"]
    header = ("store", "live code objects", "RSS MiB", "peak RSS MiB", "time s", "gc s", "collector s")
    rows = []
    for store in result["stores"].values():
        f = store["final"]
        collector = f"{f['collector_seconds']:.3f}" if store is result["stores"].get("coextra") else "-"
        rows.append((store["label"], f"{f['live_code_objects']} / {n}", _mib(f["rss_bytes"]),
                     _mib(f["peak_rss_bytes"]), f"{f['seconds']:.2f}", f"{f['gc_seconds']:.3f}", collector))
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
    return "\n".join(out)


def write_plot(result: dict, path: str) -> bool:
    """Live code objects and RSS per wave, one line per store, with matplotlib
    (the extra coextra[plot]); the format follows the file's extension.
    False when matplotlib is not installed: the table printed above has the
    same figures."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in an SVG
    # The naive store and the WeakKeyDictionary keep the same code objects,
    # so their lines coincide: the naive one is drawn wide and pale, the
    # other thin and dashed on top of it, and coextra's line at zero sits
    # above the axis (the limits leave a margin below zero).
    styles = {
        "naive": {"color": "#d62728", "linewidth": 7, "alpha": 0.35, "marker": "s", "markersize": 10},
        "weakkeydict": {"color": "#ff7f0e", "linewidth": 1.5, "linestyle": "--", "marker": "x",
                        "markersize": 7},
        "coextra": {"color": "#2ca02c", "linewidth": 2.5, "marker": "o", "markersize": 6},
    }
    figure, (live, rss) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, store in result["stores"].items():
        waves = store["waves"]
        style = {**styles.get(name, {"marker": "o"}), "label": store["label"], "clip_on": False}
        x = [w["wave"] for w in waves]
        live.plot(x, [w["live_code_objects"] for w in waves], **style)
        rss.plot(x, [(w["rss_bytes"] or 0) / 2**20 for w in waves], **style)
    for axes, title, unit in ((live, "Code objects still alive", "live code objects"),
                              (rss, "Resident memory (RSS)", "RSS (MiB)")):
        axes.set_title(title)
        axes.set_xlabel("wave (after dropping its functions)")
        axes.set_ylabel(unit)
        top = axes.get_ylim()[1]
        axes.set_ylim(bottom=-0.04 * top, top=top)
        axes.grid(alpha=0.3)
        axes.legend()
    config = result["config"]
    figure.suptitle("coextra stress: compiled products that reference their own code\n"
                    f"{config['functions']} functions compiled and dropped in {config['waves']} waves, "
                    f"CPython {config['python']}; evalframe; "
                    f"{'collect() every wave' if config.get('collect_every_wave') else 'automatic collection only'}",
                    fontsize=10)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return True


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="coextra-stress",
        description="Compile thousands of functions whose cached products reference their own code, "
                    "drop them in waves, and compare what three stores leave behind.")
    parser.add_argument("-n", "--functions", type=int, default=10_000, help="functions to compile (default 10000)")
    parser.add_argument("--waves", type=int, default=10, help="waves to compile and drop them in (default 10)")
    parser.add_argument("--stores", default=",".join(_workload.STORES),
                        help="comma-separated stores to run (default: %(default)s)")
    parser.add_argument("--payload", type=int, default=2048,
                        help="bytes of 'machine code' in every product (default 2048)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--plot", metavar="FILE.svg", help="plot live code objects and RSS per wave (needs matplotlib: pip install matplotlib)")
    parser.add_argument("--collect-every-wave", action="store_true",
                        help="call coextra.collect() after every wave (default: automatic collection only)")
    parser.add_argument("--worker", choices=sorted(_workload.STORES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.functions < 1 or args.waves < 1 or args.waves > args.functions:
        parser.error(f"need 1 <= --waves <= -n/--functions, not --waves {args.waves} "
                     f"and -n {args.functions}")
    if args.payload < 0:
        parser.error(f"--payload must be a number of bytes >= 0, not {args.payload}")
    # A store by its name or by the label the results table prints, in any case.
    names = {key.lower(): name for name, store in _workload.STORES.items()
             for key in (name, store.label)}
    given = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = [s for s in given if s.lower() not in names]
    if unknown or not given:
        choices = ", ".join(f"{name} ({store.label})" for name, store in _workload.STORES.items())
        parser.error(f"unknown store(s) {', '.join(unknown) or repr(args.stores)}; choose from {choices}")
    args.store_list = list(dict.fromkeys(names[s.lower()] for s in given))
    if args.plot:
        problem = plot_path_problem(args.plot)
        if problem:
            parser.error(f"--plot {args.plot}: {problem}")
    return args


def plot_path_problem(path: str) -> Optional[str]:
    """Why the plot could not be written to `path`, found before the run
    rather than after it, or None: a format matplotlib cannot write (when it
    is installed), or a file that cannot be created."""
    extension = os.path.splitext(path)[1][1:].lower()
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        pass  # no plot at all: main() says so after the table
    else:
        formats = FigureCanvasBase.get_supported_filetypes()
        if extension and extension not in formats:
            return f"matplotlib cannot write .{extension} files (choose from .{', .'.join(sorted(formats))})"
    existed = os.path.exists(path)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError as error:
        return f"cannot write it ({error.strerror})"
    if not existed:
        os.remove(path)
    return None


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return run_worker(args.worker, args.functions, args.waves, args.payload, args.collect_every_wave)

    run_notes = notes(args.collect_every_wave)
    result: dict = {
        "config": {"functions": args.functions, "waves": args.waves, "payload_bytes": args.payload,
                   "collect_every_wave": args.collect_every_wave,
                   "python": sys.version.split()[0], "memory_source": _memory.source()},
        "notes": run_notes,
        "stores": {},
    }
    out = sys.stderr if args.json else sys.stdout
    print(f"coextra stress: {args.functions} functions (exec'd sources, closures, lambdas, methods of "
          f"run-time classes) compiled and dropped in {args.waves} waves, CPython {result['config']['python']}",
          file=out)
    for key, note in run_notes.items():
        print(f"  {key}: {note}", file=out)
    progress = Progress(out, args.waves)
    for store in args.store_list:
        result["stores"][store] = run_store(store, args, progress)

    print("\nAfter the last wave (every function dropped by the program):", file=out)
    print(format_table(result), file=out)
    coextra_final = result["stores"].get("coextra", {}).get("final")
    collector_stats = (coextra_final or {}).get("coextra_stats", {})
    if "collections" in collector_stats:
        # Automatic collections (gc.callbacks) run inside gc.collect(): their time is
        # in "gc s" too, and in "collector s" as the collector timed itself.
        print(f"coextra's collector: {collector_stats['collections']} collections (explicit and automatic), "
              f"{collector_stats.get('detached_by_collector', '?')} holders detached by it; last one explored "
              f"{collector_stats.get('last_nodes', '?')} nodes in "
              f"{collector_stats.get('last_seconds', 0) * 1e3:.2f} ms", file=out)
    if coextra_final is not None:
        print(f"control: after coextra.reset() detached every holder by hand, "
              f"{coextra_final['live_after_reset']} / {args.functions} code objects were still alive "
              f"(nothing but their own caches kept the others)", file=out)
    if args.plot:
        if write_plot(result, args.plot):
            result["plot"] = os.path.abspath(args.plot)
            print(f"\nplot: {result['plot']}", file=out)
        else:
            print("\nno plot: matplotlib is not installed (pip install matplotlib); "
                  "the table above has the figures", file=out)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0
