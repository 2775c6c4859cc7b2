#!/usr/bin/env bash
# Prints one line "MINOR PATH" for each supported CPython (3.10-3.15) on this
# machine, one interpreter per minor version: pyenv's first, then the system's,
# then python3 on PATH. Free-threaded builds are skipped (coextra refuses them).
set -euo pipefail

declare -A seen=()
candidates=()
for minor in 10 11 12 13 14 15; do
    for p in "$HOME"/.pyenv/versions/3."$minor".*/bin/python3."$minor"; do
        [ -x "$p" ] && candidates+=("$p")
    done
    for p in /usr/local/bin/python3."$minor" /usr/bin/python3."$minor"; do
        [ -x "$p" ] && candidates+=("$p")
    done
done
if command -v python3 >/dev/null; then
    candidates+=("$(command -v python3)")
fi

for p in "${candidates[@]}"; do
    info=$("$p" -c 'import sys, sysconfig; print("%d.%d %d" % (sys.version_info[:2] + (bool(sysconfig.get_config_var("Py_GIL_DISABLED")),)))' 2>/dev/null) || continue
    version=${info% *}
    free_threaded=${info#* }
    case "$version" in 3.10|3.11|3.12|3.13|3.14|3.15) ;; *) continue ;; esac
    [ "$free_threaded" = 1 ] && continue
    [ -n "${seen[$version]:-}" ] && continue
    # The venv module must work (Debian's system Python needs python3-venv).
    "$p" -c 'import venv, ensurepip' 2>/dev/null || continue
    seen[$version]=1
    echo "$version $p"
done | sort -V
