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
"""

from __future__ import annotations

import contextlib
from types import CodeType
from typing import Any, Callable, Iterator, Optional

from . import _coextra

Callback = Callable[[CodeType], Any]


def enable(callback: Callback, *, trace: bool = False) -> None:
    """Turn the backend on with ``callback``.

    The backend's hook is installed over the interpreter's current evaluator
    whenever it is not the current one (another PEP 523 user may have replaced
    or unhooked it since); when it is, only the callback changes. ``trace=True``
    lets ``sys.settrace``, ``sys.setprofile`` and ``sys.monitoring`` see the
    callback's own frames (for debugging a backend); by default they do not.
    """
    _coextra._evalframe_enable(callback, trace=trace)


def disable() -> None:
    """Switch the backend off and put back the evaluator it runs frames with.

    If another PEP 523 evaluator is current (installed on top of the backend
    since), it is left in place; should it call the backend underneath, frames
    pass through. A callback running at the time finishes and its result is
    still stored. Does nothing when the backend is off.
    """
    _coextra._evalframe_disable()


def is_enabled() -> bool:
    """Whether the backend is on and its hook is the interpreter's evaluator.

    False once another evaluator has been installed over it or has put back
    the one it saved; ``enable()`` then installs the hook again.
    """
    return _coextra._evalframe_is_enabled()


def traces_callback() -> bool:
    """Whether the callback runs with tracing and profiling on (``trace=True``)."""
    return _coextra._evalframe_traces_callback()


def callback() -> Optional[Callback]:
    """The current callback, or None when the backend is off."""
    return _coextra._evalframe_callback()


@contextlib.contextmanager
def enabled(callback: Callback, *, trace: bool = False) -> Iterator[None]:
    """Enable the backend with ``callback`` for the ``with`` block.

    On exit the state from before the block comes back: the previous callback
    (and its ``trace`` option) if the backend was already on, otherwise the
    backend is disabled.
    """
    outer = _coextra._evalframe_callback()
    outer_trace = _coextra._evalframe_traces_callback()
    enable(callback, trace=trace)
    try:
        yield
    finally:
        if outer is None:
            disable()
        else:
            enable(outer, trace=outer_trace)


def stats() -> dict[str, int]:
    """Counters since import or the last reset_stats().

    frames: frames looked up; hits: those whose code had an entry; compiles:
    callback calls; stored: results stored (not None); passthrough: frames run
    untouched (during a compile, after disable under another evaluator, or
    resumed to throw an exception).
    """
    return _coextra._evalframe_stats()


def reset_stats() -> None:
    """Set every counter of stats() to zero."""
    _coextra._evalframe_reset_stats()


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
