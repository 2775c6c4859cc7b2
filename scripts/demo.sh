#!/usr/bin/env bash
# The main job: the demo, with the first supported interpreter found.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(ls -d .venv/py3.* | sort -V | tail -1)
PYTHONPATH="$PWD/python" "$venv/bin/python" scripts/short_demo.py "$@"
