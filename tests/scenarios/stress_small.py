"""The stress demo (python -m coextra.stress) at a small size; arguments after the
script name are passed to it (see LIST)."""

import runpy
import sys

sys.argv = ["coextra.stress", *sys.argv[1:]]
runpy.run_module("coextra.stress", run_name="__main__", alter_sys=True)
