# pyright: strict
"""A backend written as users write one, typed: mypy --strict and pyright must
accept it against coextra's stubs, and it must run
(tests/python/test_signatures.py runs all three)."""

from __future__ import annotations

import copy as copying
from collections.abc import Mapping, MutableMapping
from types import CodeType
from typing import Any, Callable, Optional

import coextra
from coextra import evalframe


def double(x: int) -> int:
    return 2 * x


class Model:
    def __init__(self, scale: int) -> None:
        self.scale = scale

    def forward(self, x: int) -> int:
        return self.scale * x


def compile_for(fn: Callable[..., Any]) -> coextra.Entry:
    """Caches a "compiled" product on any function's code."""
    holder = coextra.holder(fn, create=True)  # a Holder, never None
    found = holder.lookup()
    if found is not None:
        return found
    return coextra.attach(fn, ("compiled", fn), guard=None)


def cached_hits(fn: Callable[..., Any]) -> int:
    holder = coextra.holder(fn)
    if holder is None:
        return 0
    return sum(entry.hits for entry in holder.entries)


def remember(table: MutableMapping[object, str], key: object, name: str) -> str:
    """A function typed against MutableMapping, given an EphemeronMap."""
    table[key] = name
    table.setdefault(key, "again")
    return table[key]


def store_size(store: coextra.EphemeronMap[Model, int] | list[tuple[Model, int]]) -> int:
    if isinstance(store, MutableMapping):  # an EphemeronMap is one: reachable
        return len(store.keys())
    return len(store)


def count_items(table: Mapping[Model, int]) -> int:
    total = 0
    for model, value in table.items():
        total += model.scale + value
    return total + len(table.keys() & set(table)) + sum(table.values())


def specialisations() -> coextra.EphemeronMap[Model, int]:
    models = coextra.EphemeronMap[Model, int]()
    first, second = Model(1), Model(2)
    models[first] = 10
    models.update({second: 20})
    models.update([(second, 21)])
    copy: coextra.EphemeronMap[Model, int] = models.copy()
    assert copy == models and copy.get(first) == 10 and copy.get(Model(3), 0) == 0
    assert count_items(models) == 1 + 10 + 2 + 21 + 2 + 31
    removed: int = models.pop(second)
    assert removed == 21 and models.pop(second, None) is None
    third = Model(3)
    merged: coextra.EphemeronMap[Model, int] = models | {third: 30}
    models |= {third: 31}
    models |= [(third, 32)]
    deep: coextra.EphemeronMap[Model, int] = copying.deepcopy(models)
    assert merged[third] == 30 and models[third] == deep[third] == 32
    del models[third]
    return models


def is_small(x: int) -> bool:
    return x < 10


def compile_code(code: CodeType) -> Optional[tuple[str, str]]:
    return ("compiled", code.co_name)


def doubled_under_the_backend(x: int) -> int:
    """Returns from inside the scope: its __exit__ never swallows an exception."""
    with evalframe.enabled(compile_code):
        return double(x)


def version() -> str:
    return coextra.__version__


def run() -> int:
    model = Model(3)
    square: Callable[[int], int] = lambda x: x * x
    for fn in (double, model.forward, square):
        compile_for(fn)
        assert coextra.holder(fn) is not None
    assert double(2) == 4 and model.forward(2) == 6 and square(3) == 9
    hits = cached_hits(double) + cached_hits(model.forward)
    holder = coextra.holder(square, create=True)
    assert holder.code is square.__code__
    holder.max_entries = 4
    holder.add("again", guard=is_small)
    assert coextra.detach(double) and coextra.detach(model.forward) and coextra.detach(square)

    table = coextra.EphemeronMap[object, str]()
    assert remember(table, model, "model") == "model"
    models = specialisations()
    models[model] = 5  # the entries made in specialisations() died with their keys
    assert store_size(models) == 1 and store_size([(model, 1)]) == 1

    stats = coextra.stats()
    for _ in range(stats["entries"]):  # counts are ints
        pass
    rate = stats["auto_detached"] / max(stats["auto_seconds"], 1e-9)
    paths = coextra.explain(double)

    with evalframe.enabled(compile_code):
        assert evalframe.is_enabled()
        double(1)
    frames: int = evalframe.stats()["frames"]
    assert doubled_under_the_backend(2) == 4 and version()
    coextra.set_budget(coextra.get_budget())
    coextra.set_auto_collect(coextra.get_auto_collect())
    return hits + len(paths) + len(models) + frames + int(rate >= 0) + coextra.collect() + coextra.reset()


if __name__ == "__main__":
    print(run())
