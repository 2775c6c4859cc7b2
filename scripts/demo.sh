#!/usr/bin/env bash
# The main job: the stress demo (python -m coextra.stress) with the newest
# supported interpreter, three stores side by side, and a plot.
# Extra arguments go to the demo (e.g. -n 2000 --waves 4).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(ls -d .venv/py3.* | sort -V | tail -1)
mkdir -p demo-output
PYTHONPATH="$PWD/python" "$venv/bin/python" -m coextra.stress --plot demo-output/stress.svg "$@"
