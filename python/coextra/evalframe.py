"""coextra.evalframe: a PEP 523 frame-evaluation backend built on coextra's C API.

While enabled, every Python frame about to run is looked up in coextra (from C,
through the same function table a third-party backend gets). A frame whose code
object has an entry is a *hit*. Otherwise ``callback(code)`` is called, with the
backend switched off on every thread for the duration of the call, and a result
other than None is stored as an entry for that code. The frame then runs with
the evaluator that was installed before the backend, so the program behaves as
without it. An exception raised by the callback propagates out of the frame that
triggered it.

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


def enable(callback: Callback) -> None:
    """Install the backend with ``callback``.

    When it is already enabled, only the callback is replaced; the evaluator
    underneath stays the one found by the first enable.
    """
    _coextra._evalframe_enable(callback)


def disable() -> None:
    """Switch the backend off and restore the evaluator found at enable.

    If another PEP 523 evaluator was installed on top of the backend since, it is
    left in place and the backend stays underneath it as a pass-through. A
    callback running at the time finishes and its result is still stored.
    Does nothing when the backend is off.
    """
    _coextra._evalframe_disable()


def is_enabled() -> bool:
    """Whether the backend is on."""
    return _coextra._evalframe_is_enabled()


def callback() -> Optional[Callback]:
    """The current callback, or None when the backend is off."""
    return _coextra._evalframe_callback()


@contextlib.contextmanager
def enabled(callback: Callback) -> Iterator[None]:
    """Enable the backend with ``callback`` for the ``with`` block.

    On exit the state from before the block comes back: the previous callback
    if the backend was already on, otherwise the backend is disabled.
    """
    outer = _coextra._evalframe_callback()
    enable(callback)
    try:
        yield
    finally:
        if outer is None:
            disable()
        else:
            enable(outer)


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


__all__ = ["enable", "disable", "enabled", "is_enabled", "callback", "stats", "reset_stats"]
