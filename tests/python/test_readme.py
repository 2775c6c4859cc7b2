"""The README's example runs and prints what its comments say."""

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
