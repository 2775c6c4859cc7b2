"""Which interpreters coextra runs on, checked before the extension is loaded."""

from __future__ import annotations

import sysconfig
from typing import Callable, Optional


def check_supported(config_var: Callable[[str], Optional[object]] = sysconfig.get_config_var) -> None:
    """Raise ImportError on an interpreter coextra must not run on.

    The free-threaded build has no exact reference counts (the cycle collector's
    soundness rests on them) and co_extra is not thread-safe there on 3.13t.
    """
    if config_var("Py_GIL_DISABLED"):
        raise ImportError(
            "coextra does not support the free-threaded build of CPython "
            "(Py_GIL_DISABLED): its collector needs exact reference counts. "
            "Use the default (GIL) build of CPython 3.10-3.15."
        )
