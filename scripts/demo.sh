#!/usr/bin/env bash
# `make demo`: one interpreter, one `pip install`, the demo. Installs coextra
# with its demo extras (matplotlib, tqdm, psutil) into .venv/demo and runs the
# stress demo there; the plot goes to demo-output/stress.svg. Arguments go to
# the demo (python -m coextra.stress --help). PYTHON picks the interpreter
# (default: python3, which must be CPython 3.10 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[demo] %s\n' "$*" >&2; }

python=${PYTHON:-python3}
# What a pip build needs that pip cannot bring: a C++ compiler, and for
# Debian's own python3 the venv module and the headers.
if command -v dpkg-query >/dev/null && [ "$(id -u)" = 0 ]; then
    wanted=""
    command -v g++ >/dev/null || wanted="g++"
    "$python" -c 'import ensurepip, venv' 2>/dev/null || wanted="$wanted python3-venv"
    include=$("$python" -c 'import sysconfig; print(sysconfig.get_path("include"))')
    [ -f "$include/Python.h" ] || wanted="$wanted python3-dev"
    if [ -n "$wanted" ]; then
        log "apt-get install$wanted"
        apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $wanted >/dev/null
    fi
fi

venv=.venv/demo
if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv from $("$python" -c 'import sys; print(sys.executable)')"
    "$python" -m venv "$venv"
fi
log "pip install '.[demo]' (builds the extension)"
# (without this machine image's warnings about absent local package indexes)
"$venv/bin/python" -m pip install -q --disable-pip-version-check '.[demo]' \
    2> >(grep -v "^WARNING: Location" >&2)
mkdir -p demo-output
cd demo-output  # not the checkout: import the installed package
exec ../"$venv"/bin/python -m coextra.stress --plot stress.svg "$@"
