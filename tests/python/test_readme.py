"""What the README's examples say beyond what they print (test_docs.py runs
every block and checks its printed lines)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import REPO, subprocess_env


def ephemeron_example() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    [example] = [block for block in blocks if "coextra.EphemeronMap()" in block]
    return example


def test_the_ephemeron_map_example_with_a_weak_key_dictionary_keeps_the_key():
    # The text's claim: the same code with a WeakKeyDictionary keeps the key.
    twin = ephemeron_example().replace("coextra.EphemeronMap()", "weakref.WeakKeyDictionary()")
    proc = subprocess.run([sys.executable, "-c", twin], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == "1" and "Model object" in proc.stdout
