"""The README's examples run and do what their comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import REPO, subprocess_env


def test_readme_example_runs_and_the_collector_detaches_the_dead_cache():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    example = blocks[0]
    assert "coextra.collect()" in example
    proc = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"


def ephemeron_example() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    [example] = [block for block in blocks if "coextra.EphemeronMap()" in block]
    return example


def run_example(source: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60)


def test_readme_ephemeron_map_example_runs_and_automatic_collection_frees_the_key():
    proc = run_example(ephemeron_example())
    assert proc.returncode == 0, proc.stderr


def test_readme_ephemeron_map_example_with_a_weak_key_dictionary_leaks_the_key():
    # The comment's claim: the same code with a WeakKeyDictionary keeps the key.
    twin = ephemeron_example().replace("coextra.EphemeronMap()", "weakref.WeakKeyDictionary()")
    proc = run_example(twin)
    assert proc.returncode != 0 and "AssertionError" in proc.stderr
