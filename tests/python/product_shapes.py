"""Product shapes, generated: every path by which a product can lead back to
the code object it is cached on, for the collector's tests.

A shape is a chain from the product down to an object that references the
code (the *terminal*): the code object itself, its function, a frame or a
traceback of a call, a suspended generator. Between them come *links*, each
holding the next object of the chain: a closure cell, a class whose attribute
(a method, when the next object is the function) it is, a module-less
namespace (an exec'd globals dict whose own function closes a cycle), a list,
an instance, a bound method. Optionally an *outside referrer*, an object in
a garbage cycle of its own, also references one object of the chain: it
keeps that object referenced from outside until the GC frees it.

Whatever the shape, the function is made in a namespace of its own, a cycle
(function <-> globals) that the GC frees: when the chain does not pass
through the function, the function is one more outside referrer of the code
that the collection which frees it must not leave behind.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Optional

from hypothesis import strategies as st

import coextra

TERMINALS = ("code", "function", "frame", "traceback", "generator")
LINKS = ("cell", "class", "namespace", "list", "instance", "method")

_SOURCES = {
    "code": "def {name}(x):\n    return x + {i}\n",
    "function": "def {name}(x):\n    return x + {i}\n",
    "frame": "import sys\ndef {name}(x):\n    return sys._getframe()\n",
    "traceback": "def {name}(x):\n    raise ValueError(x + {i})\n",
    "generator": "def {name}(x):\n    yield x + {i}\n",
}


@dataclass(frozen=True)
class ProductShape:
    terminal: str  # one of TERMINALS
    links: tuple[str, ...]  # from the product down, each one of LINKS
    # The object of the chain (0: the product, len(links): the terminal) that
    # an outside garbage cycle also references, or None.
    referrer: Optional[int]

    def __str__(self) -> str:
        chain = " -> ".join(("product",) + self.links + (self.terminal, "code"))
        seen = "" if self.referrer is None else f", outside referrer at {self.referrer}"
        return chain + seen


MAX_LINKS = 3
# The strategies a draw uses, made once: Hypothesis remembers every strategy
# object a test draws from, so strategies made inside the draw would grow
# with every run of the test (the refleak hunter, tests/refleak, sees it).
_TERMINAL = st.sampled_from(TERMINALS)
_LINKS = st.lists(st.sampled_from(LINKS), max_size=MAX_LINKS)
_REFERRER = [st.none() | st.integers(0, links) for links in range(MAX_LINKS + 1)]  # by chain length


@st.composite
def product_shapes(draw) -> ProductShape:
    terminal = draw(_TERMINAL)
    links = tuple(draw(_LINKS))
    referrer = draw(_REFERRER[len(links)])
    return ProductShape(terminal, links, referrer)


class Instance:
    def __init__(self, value):
        self.value = value


def _bound_to(value):
    return value


def _terminal(kind: str, f):
    if kind == "code":
        return f.__code__
    if kind == "function":
        return f
    if kind == "frame":
        return f(0)
    if kind == "traceback":
        try:
            f(0)
        except ValueError as e:
            return e.__traceback__.tb_next  # f's own frame
        raise AssertionError("the function raises")
    generator = f(0)
    next(generator)
    return generator


def _link(kind: str, inner, i: int):
    if kind == "cell":
        return types.CellType(inner)
    if kind == "class":
        return type(f"ShapeClass{i}", (), {"attr": inner})
    if kind == "namespace":
        namespace: dict = {}
        exec("def get():\n    return value\n", namespace)
        namespace["value"] = inner
        return namespace
    if kind == "list":
        return [inner]
    if kind == "instance":
        return Instance(inner)
    return types.MethodType(_bound_to, inner)


def build(shape: ProductShape, i: int):
    """Makes instance `i` of `shape`, caches its product on the function's
    code and returns the function: kept, the code stays live; dropped, only
    the cache and the GC's garbage reach it."""
    name = f"shaped{i}"
    namespace: dict = {}
    exec(compile(_SOURCES[shape.terminal].format(name=name, i=i), f"<shape {i}>", "exec"), namespace)
    f = namespace[name]
    chain = [_terminal(shape.terminal, f)]
    for link in reversed(shape.links):
        chain.append(_link(link, chain[-1], i))
    chain.reverse()  # the product first
    coextra.attach(f, chain[0])
    if shape.referrer is not None:
        outside = [chain[shape.referrer]]
        outside.append(outside)  # garbage as soon as this returns
    return f
