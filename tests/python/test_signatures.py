"""The type stubs are the runtime's signatures: every public function and
method accepts exactly the parameters _coextra.pyi declares, by position and
by keyword, stats() has the keys and types the stub's TypedDict declares,
and a client written as users write passes mypy --strict and pyright against
the stubs (which pass both themselves)."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys

import pytest

import coextra
from coextra import _coextra
from conftest import REPO, make_function, subprocess_env
from type_checkers import mypy, pyright

STUB = os.path.join(REPO, "python", "coextra", "_coextra.pyi")


def stub_signatures() -> dict[str, list[tuple[str, bool, str]]]:
    """'name' or 'Class.method' -> [(parameter, has_default, kind)], from the stub."""
    tree = ast.parse(open(STUB).read())
    out: dict[str, list[tuple[str, bool, str]]] = {}

    def params(fn: ast.FunctionDef) -> list[tuple[str, bool, str]]:
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
        result = [(p.arg, d, "positional") for p, d in zip(positional, defaults)]
        result += [(p.arg, d is not None, "keyword") for p, d in zip(a.kwonlyargs, a.kw_defaults)]
        if a.vararg:
            result.append((a.vararg.arg, True, "varargs"))
        if a.kwarg:
            result.append((a.kwarg.arg, True, "varkw"))
        return [r for r in result if r[0] != "self"]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = params(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not any(
                    isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list
                ):
                    out[f"{node.name}.{item.name}"] = params(item)
    return out


STUBS = stub_signatures()


def test_the_stub_declares_every_public_runtime_function_and_no_other():
    runtime = {
        name
        for name in dir(_coextra)
        if callable(getattr(_coextra, name)) and not isinstance(getattr(_coextra, name), type)
        and not name.startswith("__")
    }
    declared = {name for name in STUBS if "." not in name}
    assert runtime == declared


def test_text_signatures_match_the_stub_where_the_runtime_has_one():
    # The raw functions and methods carry a __text_signature__; pybind11's do
    # not (the keyword calls below check those).
    checked = []
    for name, params in STUBS.items():
        owner, _, attr = name.rpartition(".")
        scope = getattr(_coextra, owner) if owner else _coextra
        # A C type's constructor signature is the class's own (its docstring's).
        obj = scope if attr == "__init__" else getattr(scope, attr)
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        names = [p.name for p in signature.parameters.values() if p.name != "self"]
        assert names == [p for p, _, _ in params], name
        checked.append(name)
    assert {"holder", "Holder.add", "Holder.remove", "Holder.lookup", "EphemeronMap.__init__",
            "EphemeronMap.get"} <= set(checked)


# One call per stubbed function or method, every argument that has a name given
# by keyword with a value that makes sense. A TypeError means the runtime does
# not accept the stub's parameter name.
def keyword_calls():
    f = make_function()
    code = f.__code__
    yield "holder", lambda: coextra.holder(obj=code, create=True)
    yield "attach", lambda: coextra.attach(obj=code, product="p", guard=None)
    yield "detach", lambda: coextra.detach(obj=code)
    yield "reset", lambda: coextra.reset()
    yield "holders", lambda: coextra.holders()
    yield "stats", lambda: coextra.stats()
    yield "collect", lambda: coextra.collect()
    yield "set_auto_collect", lambda: coextra.set_auto_collect(enabled=True)
    yield "get_auto_collect", lambda: coextra.get_auto_collect()
    yield "set_budget", lambda: coextra.set_budget(nodes=coextra.get_budget())
    yield "get_budget", lambda: coextra.get_budget()
    yield "explain", lambda: (coextra.explain(obj=code), coextra.explain(obj=f, map=coextra.EphemeronMap()))
    holder = coextra.holder(code, create=True)
    yield "Holder.add", lambda: holder.add(product="q", guard=None)
    yield "Holder.lookup", lambda: holder.lookup()
    yield "Holder.remove", lambda: holder.remove(entry=holder.add(product="r"))
    yield "Holder.clear", lambda: holder.clear()
    yield "Holder.__len__", lambda: len(holder)
    yield "Holder.__iter__", lambda: list(holder)
    # EphemeronMap's parameters are positional-only, as dict's are.
    m = coextra.EphemeronMap()
    yield "EphemeronMap.__init__", lambda: coextra.EphemeronMap([(f, 1)])
    yield "EphemeronMap.__setitem__", lambda: m.__setitem__(f, 1)
    yield "EphemeronMap.__getitem__", lambda: m[f]
    yield "EphemeronMap.__contains__", lambda: f in m
    yield "EphemeronMap.__len__", lambda: len(m)
    yield "EphemeronMap.__iter__", lambda: list(m)
    yield "EphemeronMap.get", lambda: m.get(f, None)
    yield "EphemeronMap.setdefault", lambda: m.setdefault(f, 2)
    yield "EphemeronMap.keys", lambda: m.keys()
    yield "EphemeronMap.values", lambda: m.values()
    yield "EphemeronMap.items", lambda: m.items()
    yield "EphemeronMap.update", lambda: m.update({f: 3})
    yield "EphemeronMap.pop", lambda: m.pop(f, None)
    yield "EphemeronMap.popitem", lambda: (m.__setitem__(f, 4), m.popitem())
    yield "EphemeronMap.__delitem__", lambda: (m.__setitem__(f, 5), m.__delitem__(f))
    yield "EphemeronMap.clear", lambda: m.clear()
    yield "EphemeronMap.__eq__", lambda: m.__eq__({})
    yield "EphemeronMap.copy", lambda: m.copy()
    yield "EphemeronMap.__copy__", lambda: m.__copy__()
    yield "EphemeronMap.__deepcopy__", lambda: m.__deepcopy__({})
    yield "EphemeronMap.__or__", lambda: m | {f: 6}
    yield "EphemeronMap.__ror__", lambda: {f: 7} | m
    yield "EphemeronMap.__ior__", lambda: m.__ior__({f: 8})


EVALFRAME_STUB = os.path.join(REPO, "python", "coextra", "evalframe.pyi")


def test_the_evalframe_stub_declares_the_runtime_signatures():
    declared = {node.name: node for node in ast.parse(open(EVALFRAME_STUB).read()).body
                if isinstance(node, ast.FunctionDef)}
    assert set(declared) == set(coextra.evalframe.__all__)
    for name, node in declared.items():
        runtime = inspect.signature(getattr(coextra.evalframe, name))
        expected = [(a.arg, "KEYWORD_ONLY" if a in node.args.kwonlyargs else "POSITIONAL_OR_KEYWORD")
                    for a in node.args.args + node.args.kwonlyargs]
        assert [(p.name, p.kind.name) for p in runtime.parameters.values()] == expected, name


def test_every_stubbed_function_accepts_its_parameters_by_keyword():
    calls = dict(keyword_calls())
    assert set(calls) == set(STUBS), "a keyword call for every stubbed function"
    for name, call in calls.items():
        call()  # raises TypeError on a name the runtime does not know
    coextra.reset()


def test_unknown_repeated_and_missing_arguments_are_type_errors():
    f = make_function()
    with pytest.raises(TypeError, match="unexpected or repeated argument 'create'"):
        coextra.holder(f, True, create=True)
    with pytest.raises(TypeError, match="unexpected or repeated argument 'code'"):
        coextra.holder(code=f)
    with pytest.raises(TypeError, match="missing required argument 'obj'"):
        coextra.holder()
    with pytest.raises(TypeError, match="at most 2 arguments"):
        coextra.holder(f, True, 3)
    holder = coextra.holder(f, create=True)
    with pytest.raises(TypeError, match="missing required argument 'entry'"):
        holder.remove()
    with pytest.raises(TypeError, match="missing required argument 'product'"):
        holder.add(guard=None)


CLIENT = os.path.join(REPO, "tests", "typing", "client.py")


def test_stats_has_the_keys_and_types_of_the_stubs_typed_dict():
    tree = ast.parse(open(STUB).read())
    (declared,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "_Stats"]
    types_ = {item.target.id: ast.unparse(item.annotation) for item in declared.body
              if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
    stats = coextra.stats()
    assert set(stats) == set(types_)
    assert {key: type(value).__name__ for key, value in stats.items()} == types_


def test_the_client_and_the_stubs_pass_mypy_strict():
    # --warn-unreachable: a stub that contradicts the runtime's ABC registration
    # makes mypy skip the code after isinstance(m, MutableMapping) silently.
    for target in (CLIENT, STUB, EVALFRAME_STUB):
        run = mypy("--strict", "--warn-unreachable", target)
        assert run.returncode == 0, run.stdout + run.stderr
    # ... and the client runs.
    run = subprocess.run([sys.executable, CLIENT], env=subprocess_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_client_and_the_stubs_pass_pyright_strict():
    # The client asks for strict mode itself (# pyright: strict).
    run = pyright(CLIENT, STUB, EVALFRAME_STUB)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 errors" in run.stdout
