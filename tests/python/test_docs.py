"""The code in README.md and docs/*.md runs and prints what the text says.

Every ```python block is a complete script: it runs in a fresh interpreter
(coextra importable, the current directory a temporary one) and must exit
0; its asserts are checks too. Where a line ends in a comment `# -> TEXT`,
TEXT is a line the block prints: the block's output must be exactly those
lines, in order. A block whose first line is `# dies with SIGNAME` shows a
crash (a CPython bug the text explains): it must die of that signal. A
block whose first line is a comment naming a file of the repository
(`# examples/backend/setup.py`) shows part of that file: it must be in it.

The blocks are written as users write code, so they pass mypy and pyright
in their default modes as they stand (`namespace: dict = {}`, a None check
before using what holder() returns)."""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import REPO, subprocess_env
from type_checkers import mypy, pyright

PAGES = [os.path.join(REPO, "README.md"), *sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PRINTS = re.compile(r"#\s*->\s*(.*?)\s*$")
DIES = re.compile(r"#\s*dies with (SIG[A-Z]+)")
QUOTES = re.compile(r"# ([\w./-]+)\n")


def python_blocks():
    for page in PAGES:
        text = open(page, encoding="utf-8").read()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield pytest.param(match.group(1), id=f"{os.path.relpath(page, REPO)}:{line}")


def expected_output(block: str) -> list[str] | None:
    lines = [PRINTS.search(line) for line in block.splitlines()]
    found = [m.group(1) for m in lines if m]
    return found or None


def died_of(proc: subprocess.CompletedProcess, name: str) -> bool:
    """Whether the process died of signal `name`: killed by it, or, under
    AddressSanitizer (the asan session), reported by ASan's handler, which
    then exits with its own exit code."""
    if proc.returncode == -getattr(signal, name):
        return True
    return proc.returncode > 0 and f"AddressSanitizer: {name[3:]}" in proc.stderr


BLOCKS = list(python_blocks())


def test_the_docs_have_python_blocks_to_run():
    assert len(BLOCKS) >= 5


def scripts(tmp_path) -> list[str]:
    """The blocks that are scripts (not quotes of a file, not crashes), each
    written to a file of its own, named after its page and line."""
    paths = []
    for param in BLOCKS:
        (block,) = param.values
        quotes = QUOTES.match(block)
        if (quotes and os.path.isfile(os.path.join(REPO, quotes.group(1)))) or DIES.match(block):
            continue
        path = tmp_path / (re.sub(r"\W", "_", param.id) + ".py")
        path.write_text(block, encoding="utf-8")
        paths.append(str(path))
    return paths


def test_the_python_blocks_pass_mypy_as_written(tmp_path):
    paths = scripts(tmp_path)
    assert len(paths) >= 5
    run = mypy(*paths)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_python_blocks_pass_pyright_as_written(tmp_path):
    run = pyright(*scripts(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 errors" in run.stdout


@pytest.mark.parametrize("block", BLOCKS)
def test_a_python_block_of_the_docs_runs_and_prints_what_it_says(block, tmp_path):
    quotes = QUOTES.match(block)
    if quotes and os.path.isfile(os.path.join(REPO, quotes.group(1))):
        with open(os.path.join(REPO, quotes.group(1)), encoding="utf-8") as fh:
            assert block[quotes.end():] in fh.read()
        return
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                          env=subprocess_env(), cwd=tmp_path, timeout=300)
    dies = DIES.match(block)
    if dies:
        assert died_of(proc, dies.group(1)), (proc.returncode, proc.stderr[-3000:])
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = expected_output(block)
    if expected is not None:
        assert proc.stdout.splitlines() == expected


def test_an_output_marker_that_does_not_match_fails():
    # The check itself can fail: a block whose marker says the wrong thing.
    block = "print(1 + 1)  # -> 3\n"
    assert expected_output(block) == ["3"]
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True)
    assert proc.stdout.splitlines() != expected_output(block)
