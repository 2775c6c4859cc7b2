"""What CPython itself keeps of code exec'd in waves, without coextra.

The soak (tests/soak/waves.py) execs waves of functions with fresh names. On
some interpreters resident memory grows with the waves whatever coextra does:
this runs the same exec'd waves with coextra not even imported and prints the
growth, so a soak's RSS column can be read against it.

    python bench/cpython_exec_growth.py [--waves 1500] [--per-wave 1500] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys

import psutil


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=1500)
    parser.add_argument("--per-wave", type=int, default=1500)
    parser.add_argument("--json", help="also write the results to this file (make bench's summary format)")
    args = parser.parse_args()
    assert "coextra" not in sys.modules
    process = psutil.Process()
    gc.collect()
    start = process.memory_info().rss
    report_every = max(1, args.waves // 3)
    print(f"Python {sys.version.split()[0]}, coextra not imported\n")
    print("| waves | functions exec'd and dropped | RSS growth |")
    print("|---:|---:|---:|")
    for wave in range(args.waves):
        source = "".join(f"def w{wave}_{i}(x):\n    return x + {i}\n" for i in range(args.per_wave))
        namespace: dict = {}
        exec(compile(source, f"<wave {wave}>", "exec"), namespace)
        del namespace
        if (wave + 1) % report_every == 0 or wave + 1 == args.waves:
            gc.collect()
            growth = (process.memory_info().rss - start) / 2**20
            print(f"| {wave + 1:,} | {(wave + 1) * args.per_wave:,} | {growth:.0f} MiB |")
    end = process.memory_info().rss
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"suite": "cpython_exec_growth.py", "python": sys.version.split()[0],
                       "how": f"{args.waves} waves of {args.per_wave} exec'd functions, coextra not imported",
                       "groups": [{"title": "CPython alone, functions exec'd in waves and dropped: RSS",
                                   "unit": "MiB", "reference": "before the waves",
                                   "results": {"before the waves": start / 2**20, "after": end / 2**20}}]},
                      fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
