"""Where coextra's C API header lives (see coextra.get_include)."""

from __future__ import annotations

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The directory to add to a C or C++ extension's include path so that
    ``#include <coextra/coextra.h>`` (and ``coextra/coextra.hpp``) works.

    An installed package carries the headers in coextra/include; a source
    checkout (``PYTHONPATH=python``, ``pip install -e .``) has them in
    csrc/include.
    """
    installed = os.path.join(_HERE, "include")
    if os.path.isfile(os.path.join(installed, "coextra", "coextra.h")):
        return installed
    return os.path.join(os.path.dirname(os.path.dirname(_HERE)), "csrc", "include")
