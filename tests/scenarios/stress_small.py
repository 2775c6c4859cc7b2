"""The stress demo (python -m coextra.stress) at a small size; arguments after the
script name are passed to it (see LIST)."""

import importlib.util
import runpy
import sys

from _scenario import skip

if importlib.util.find_spec("coextra.stress") is None:
    skip("coextra.stress is not built on this branch")
sys.argv = ["coextra.stress", *sys.argv[1:]]
runpy.run_module("coextra.stress", run_name="__main__", alter_sys=True)
