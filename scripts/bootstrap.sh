#!/usr/bin/env bash
# Installs whatever coextra's build and tests need and is missing, then makes
# one virtual environment per supported interpreter (.venv/py3.X). CPython 3.14
# and 3.15, when the host has neither, come from a Debian unstable root
# (scripts/sid-root.sh).
# Idempotent and quick when everything is there. Debian 12 and 13, as root.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[bootstrap] %s\n' "$*" >&2; }

debian_major() { cut -d. -f1 /etc/debian_version 2>/dev/null || echo unknown; }

# The debug interpreter for refleak hunting differs between releases.
debug_python_package() {
    case "$(debian_major)" in
        12) echo python3.11-dbg ;;
        13) echo python3.13-dbg ;;
        *) echo "" ;;
    esac
}

missing_packages() {
    local pkg
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
            echo "$pkg"
        fi
    done
}

APT_UPDATED=0
apt_install() {
    local wanted
    wanted=$(missing_packages "$@")
    [ -z "$wanted" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        log "missing Debian packages (run as root to install): $wanted"
        return 1
    fi
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        apt-get update -qq
        APT_UPDATED=1
    fi
    log "apt-get install $wanted"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $wanted >/dev/null
}

install_debian_packages() {
    if ! command -v dpkg-query >/dev/null; then
        log "not a Debian system: install cmake, g++, GoogleTest, Google Benchmark, valgrind, clang yourself"
        return 0
    fi
    # nodejs: pyright's (requirements-dev.txt).
    apt_install build-essential cmake libgtest-dev libgmock-dev libbenchmark-dev valgrind clang \
        python3-venv nodejs $(debug_python_package)
    # Sanitizer runtimes for clang (LeakSanitizer lives there), versioned like clang.
    local clang_major
    clang_major=$(clang -dumpversion | cut -d. -f1)
    apt_install "libclang-rt-${clang_major}-dev"
    # The debug interpreter's headers, to build coextra for it.
    case "$(debian_major)" in
        12) apt_install libpython3.11-dbg python3.11-dev ;;
        13) apt_install libpython3.13-dbg python3.13-dev ;;
    esac
}

# One line "MINOR PATH" for each supported CPython (3.10-3.15) on this machine,
# one interpreter per minor version: pyenv's first, then the system's, then
# python3 on PATH. Free-threaded builds are skipped (coextra refuses them), and
# so are interpreters whose venv module does not work (Debian's system Python
# needs python3-venv).
interpreters() {
    local -a candidates=()
    local minor p
    for minor in 10 11 12 13 14 15; do
        for p in "$HOME"/.pyenv/versions/3."$minor".*/bin/python3."$minor" \
                 /usr/local/bin/python3."$minor" /usr/bin/python3."$minor"; do
            [ -x "$p" ] && candidates+=("$p")
        done
    done
    if command -v python3 >/dev/null; then
        candidates+=("$(command -v python3)")
    fi
    local -A seen=()
    local version
    for p in "${candidates[@]}"; do
        version=$("$p" -c 'import sys, sysconfig, venv, ensurepip
if sys.version_info[:2] >= (3, 10) and sys.version_info[:2] <= (3, 15) and not sysconfig.get_config_var("Py_GIL_DISABLED"):
    print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
        [ -n "$version" ] && [ -z "${seen[$version]:-}" ] || continue
        seen[$version]=1
        echo "$version $p"
    done | sort -V
}

# pip install, without this machine's harmless warnings about absent local indexes.
quiet_pip() {
    local venv=$1
    shift
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" 2> >(grep -v "^WARNING: Location" >&2)
}

make_venvs() {
    mkdir -p .venv
    local stamp_value version python venv
    while read -r version python; do
        venv=.venv/py$version
        # requirements-py3.X.txt: optional test dependencies for one version only.
        stamp_value=$({ cat requirements-dev.txt; cat "requirements-py$version.txt" 2>/dev/null || :; } |
            sha1sum | cut -c1-16)
        if [ ! -x "$venv/bin/python" ]; then
            log "creating $venv from $python"
            "$python" -m venv "$venv"
        fi
        if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$stamp_value" ]; then
            log "installing Python packages into $venv"
            quiet_pip "$venv" --upgrade pip
            quiet_pip "$venv" -r requirements-dev.txt
            if [ -e "requirements-py$version.txt" ]; then
                quiet_pip "$venv" -r "requirements-py$version.txt"
            fi
            echo "$stamp_value" > "$venv/.requirements"
        fi
    done < <(interpreters)
    if [ -z "$(ls .venv)" ]; then
        log "no supported CPython (3.10-3.15) found"
        return 1
    fi
}

# Refleak hunting (tests/refleak/) needs Debian's debug interpreter, which has
# sys.gettotalrefcount; its venv is .venv/dbg (no pyperf/psutil: not needed there).
make_debug_venv() {
    local python
    python=$(debug_python_package)
    [ -n "$python" ] && command -v "$python" >/dev/null || return 0
    local venv=.venv/dbg stamp_value=dbg-2
    if [ ! -x "$venv/bin/python" ]; then
        log "creating $venv from $python"
        "$python" -m venv "$venv"
    fi
    if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$stamp_value" ]; then
        log "installing Python packages into $venv"
        # The debug interpreter reports pip's unclosed files; they are not ours.
        PYTHONWARNINGS=ignore::ResourceWarning quiet_pip "$venv" --upgrade pip
        PYTHONWARNINGS=ignore::ResourceWarning quiet_pip "$venv" "pybind11>=3.0" pytest hypothesis attrs
        echo "$stamp_value" > "$venv/.requirements"
    fi
}

# CPython 3.14 and 3.15 in the Debian unstable root when the host has neither.
make_sid_root() {
    [ -n "$(interpreters | awk '$1 == "3.14" || $1 == "3.15"')" ] && return 0
    command -v dpkg-query >/dev/null || return 0
    scripts/sid-root.sh make
}

install_debian_packages
make_venvs
make_debug_venv
make_sid_root
