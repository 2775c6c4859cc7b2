"""coextra.evalframe: a PEP 523 frame-evaluation backend built on coextra's C API.

While enabled, every Python frame about to run is looked up in coextra (from C,
through the same function table a third-party backend gets). A frame whose code
object has an entry is a *hit*. Otherwise ``callback(code)`` is called, with the
backend switched off on every thread and tracing and profiling suspended on its
own thread for the duration of the call, and a result other than None is stored
as an entry for that code. The frame then runs with the evaluator that was
installed before the backend. An exception raised by the callback propagates out
of the frame that triggered it. What any PEP 523 evaluator changes (no call
specialization, less recursion depth, ...) is listed in the README's
"PEP 523 effects".

    from coextra import evalframe

    with evalframe.enabled(lambda code: ("compiled", code.co_name)):
        run_the_program()
    print(evalframe.stats())   # {'frames': ..., 'hits': ..., 'compiles': ..., ...}

Every function here is implemented in C (``coextra._coextra._evalframe``): a
function written in Python would start a frame, and with it a call of the
callback, so a callback that raises could keep the backend from being switched
off. Signatures and types: evalframe.pyi.
"""

from ._coextra import _evalframe

enable = _evalframe.enable
disable = _evalframe.disable
enabled = _evalframe.enabled
is_enabled = _evalframe.is_enabled
traces_callback = _evalframe.traces_callback
callback = _evalframe.callback
stats = _evalframe.stats
reset_stats = _evalframe.reset_stats
EnabledScope = _evalframe.EnabledScope

del _evalframe

__all__ = [
    "enable",
    "disable",
    "enabled",
    "is_enabled",
    "traces_callback",
    "callback",
    "stats",
    "reset_stats",
]

# Named in errors and reprs as this module's (coextra/__init__.py says why).
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
