"""coextra: GC-safe per-code-object caches for frame-evaluation backends.

Products cached on a code object live in GC-tracked holders owned by a registry;
the code object's co_extra keeps only a non-owning pointer for O(1) lookup.
See README.md for the manual.
"""

from . import _support

_support.check_supported()

from ._coextra import (  # noqa: E402  (the check above must run first)
    EphemeronMap,
    Entry,
    Holder,
    attach,
    collect,
    detach,
    explain,
    get_auto_collect,
    get_budget,
    holder,
    holders,
    reset,
    set_auto_collect,
    set_budget,
    stats,
)
from ._include import get_include  # noqa: E402
from ._version import __version__  # noqa: E402
from . import evalframe  # noqa: E402

import collections.abc as _abc  # noqa: E402
import types as _types  # noqa: E402


# A C type cannot inherit the ABC; registering makes isinstance() true. It
# implements every MutableMapping method itself.
_abc.MutableMapping.register(EphemeronMap)
del _abc


__all__ = [
    "EphemeronMap",
    "Entry",
    "Holder",
    "attach",
    "collect",
    "detach",
    "explain",
    "get_auto_collect",
    "get_budget",
    "holder",
    "holders",
    "reset",
    "set_auto_collect",
    "set_budget",
    "stats",
    "get_include",
    "evalframe",
    "__version__",
]

# The C functions name themselves in errors and reprs by their module: make
# it the one users import ("coextra.collect() takes no arguments"), not the
# private extension module.
for _name in __all__:
    if isinstance(globals()[_name], _types.BuiltinFunctionType):
        globals()[_name].__module__ = __name__
del _name, _types
