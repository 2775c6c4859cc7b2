"""A small typed backend: mypy --strict must accept it against coextra's stubs
(tests/python/test_signatures.py runs the check)."""

from __future__ import annotations

from types import CodeType, FunctionType
from typing import Optional

import coextra
from coextra import evalframe


def compile_code(code: CodeType) -> tuple[str, CodeType]:
    return ("compiled", code)


def cached(function: FunctionType) -> Optional[coextra.Entry]:
    holder: Optional[coextra.Holder] = coextra.holder(obj=function.__code__, create=False)
    if holder is None:
        return None
    entry = holder.lookup()
    if entry is not None:
        product = entry.product
        assert product is not None
        holder.remove(entry=entry)
    return entry


def specialised(function: FunctionType, table: coextra.EphemeronMap[FunctionType, str]) -> str:
    found = table.get(function)
    if found is None:
        found = table.setdefault(function, function.__name__)
    return found


def run() -> int:
    namespace: dict[str, object] = {}
    exec("def f(x):\n    return x + 1\n", namespace)
    f = namespace["f"]
    assert isinstance(f, FunctionType)
    assert cached(f) is None
    entry: coextra.Entry = coextra.attach(obj=f.__code__, product=("p", f), guard=None)
    hits: int = entry.hits
    holder = coextra.holder(f.__code__, create=True)
    assert holder is not None and holder.code is not None
    holder.max_entries = 4
    holder.add(product="again", guard=lambda x: isinstance(x, int))
    stats: dict[str, float] = coextra.stats()
    coextra.set_budget(nodes=coextra.get_budget())
    coextra.set_auto_collect(enabled=coextra.get_auto_collect())
    paths: list[list[object]] = coextra.explain(obj=f.__code__)
    with evalframe.enabled(compile_code, trace=False):
        assert evalframe.is_enabled()
    frames: int = evalframe.stats()["frames"]
    detached: bool = coextra.detach(obj=f.__code__)
    return hits + len(paths) + int(stats["holders"]) + frames + int(detached) + coextra.collect()


if __name__ == "__main__":
    print(run())
