#!/usr/bin/env bash
# Lays out an importable coextra package in DIR/coextra beside a module built
# there (the sanitized and debug builds): the package's Python files and the C
# API headers where an installed package has them (coextra.get_include()).
# Usage: scripts/stage_package.sh DIR   (DIR relative to the repository root, or absolute)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$(realpath -m "$1")
mkdir -p "$dest"
(cd python && find coextra -type f ! -name '*.so' ! -path '*__pycache__*' \
    -exec cp --parents {} "$dest/" \;)
mkdir -p "$dest/coextra/include"
cp -r csrc/include/coextra "$dest/coextra/include/"
