#!/usr/bin/env bash
# CPython 3.14 and 3.15 for hosts whose Debian release has neither: a minimal
# Debian unstable root (debootstrap) holding both interpreters, their headers,
# the C++ toolchain and one virtual environment per interpreter.
#
#   scripts/sid-root.sh make          create or complete the root, then give this
#                                     checkout .venv/py3.14 and .venv/py3.15:
#                                     entry points into the root
#   scripts/sid-root.sh run CMD...    run CMD inside the root, same cwd (which must
#                                     be in this checkout, or exist in the root)
#                                     and environment; CMD directly when already inside
#
# The root is a cache shared by every clone on the machine: $COEXTRA_SID_ROOT,
# default /var/cache/coextra/sid-root; `make` records it in .venv/sid-root for
# later `run`s of this checkout. `run` mounts /proc, /dev and the
# checkout (at the same absolute path, so every path means the same inside and
# out) in a mount namespace of its own: the mounts end with the command and
# nothing is left mounted on the host. Needs root; Debian 12 and 13.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
SID_ROOT=${COEXTRA_SID_ROOT:-$(cat "$HERE/.venv/sid-root" 2>/dev/null || echo /var/cache/coextra/sid-root)}
MARKER=/etc/coextra-sid-root
VERSIONS="3.14 3.15"
PACKAGES="python3.14 python3.14-dev python3.14-venv libpython3.14-testsuite
python3.15 python3.15-dev python3.15-venv libpython3.15-testsuite
g++ cmake make libgtest-dev libgmock-dev valgrind ca-certificates"

log() { printf '[sid-root] %s\n' "$*" >&2; }

inside() { [ -e "$MARKER" ]; }

run() {
    if inside; then
        exec "$@"
    fi
    [ -e "$SID_ROOT$MARKER" ] || { log "no root at $SID_ROOT (scripts/sid-root.sh make)"; exit 1; }
    # pip (and ssl) inside the root trust this machine's CA bundle (a proxy's CA may be in it).
    PIP_CERT=/etc/coextra-host-ca.crt SSL_CERT_FILE=/etc/coextra-host-ca.crt exec unshare --mount --propagation private -- /bin/sh -c '
        set -e
        root=$1 repo=$2 cwd=$3; shift 3
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mkdir -p "$root$repo"
        mount --bind "$repo" "$root$repo"
        exec chroot "$root" /bin/sh -c '\''cd "$1" && shift && exec "$@"'\'' sh "$cwd" "$@"
    ' sh "$SID_ROOT" "$HERE" "$PWD" "$@"
}

stamp() { echo "$PACKAGES" | sha1sum | cut -c1-16; }

make_root() {
    if [ "$(cat "$SID_ROOT/.coextra-packages" 2>/dev/null)" = "$(stamp)" ]; then
        return 0
    fi
    if [ ! -e "$SID_ROOT$MARKER" ]; then
        command -v debootstrap >/dev/null || {
            log "apt-get install debootstrap"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
        }
        # Built beside its final place, moved there whole: an interrupted run leaves no half root.
        rm -rf "$SID_ROOT.new"
        mkdir -p "$(dirname "$SID_ROOT")"
        log "debootstrap --variant=minbase sid $SID_ROOT (a few minutes)"
        debootstrap --variant=minbase sid "$SID_ROOT.new" http://deb.debian.org/debian >"$SID_ROOT.log" 2>&1 ||
            { log "debootstrap failed, see $SID_ROOT.log"; exit 1; }
        touch "$SID_ROOT.new$MARKER"
        rm -rf "$SID_ROOT"
        mv "$SID_ROOT.new" "$SID_ROOT"
    fi
    cp /etc/ssl/certs/ca-certificates.crt "$SID_ROOT/etc/coextra-host-ca.crt"
    # Signatures are checked; the Release file's expiry is not, since a mirror
    # or proxy may serve one older than this machine's clock allows.
    echo 'Acquire::Check-Valid-Until "false";' >"$SID_ROOT/etc/apt/apt.conf.d/99coextra"
    log "apt-get install in the root: $(echo $PACKAGES)"
    # shellcheck disable=SC2086
    (run /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(echo $PACKAGES) >/dev/null && apt-get clean" </dev/null)
    stamp >"$SID_ROOT/.coextra-packages"
}

# A venv per interpreter inside the root (/opt/coextra/py3.X), and in the
# checkout an entry point .venv/py3.X/bin/python that runs it there.
make_venvs() {
    local repo=$HERE version stamp_value venv
    for version in $VERSIONS; do
        # A host interpreter's venv stays.
        [ -e "$repo/.venv/py$version/pyvenv.cfg" ] && continue
        venv=/opt/coextra/py$version
        stamp_value=$({ cat "$repo/requirements-dev.txt"; cat "$repo/requirements-py$version.txt" 2>/dev/null || :; } |
            sha1sum | cut -c1-16)
        if [ "$(cat "$SID_ROOT$venv/.requirements" 2>/dev/null)" != "$stamp_value" ]; then
            log "installing Python packages into $venv (in the root)"
            (cd "$repo" && run /bin/sh -c "
                set -e
                [ -x $venv/bin/python ] || python$version -m venv $venv
                $venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
                $venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
                if [ -e requirements-py$version.txt ]; then
                    $venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-py$version.txt
                fi" 2> >(grep -v "^WARNING: Location" >&2) </dev/null)
            echo "$stamp_value" >"$SID_ROOT$venv/.requirements"
        fi
        mkdir -p "$repo/.venv/py$version/bin"
        printf '#!/bin/sh\n# CPython %s in the Debian unstable root (scripts/sid-root.sh).\nexec "%s/scripts/sid-root.sh" run %s/bin/python "$@"\n' \
            "$version" "$repo" "$venv" >"$repo/.venv/py$version/bin/python"
        chmod +x "$repo/.venv/py$version/bin/python"
        touch "$repo/.venv/py$version/in-sid-root"
    done
}

case "${1:-}" in
    run) shift; run "$@" ;;
    make)
        if [ "$(id -u)" != 0 ]; then
            log "not root: no CPython 3.14/3.15 root (run as root to make it)"
            exit 0
        fi
        make_root
        mkdir -p "$HERE/.venv"
        echo "$SID_ROOT" >"$HERE/.venv/sid-root"
        make_venvs
        ;;
    *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
