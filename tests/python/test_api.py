"""The Python API of coextra, as the specification of its behaviour."""

from __future__ import annotations

import types

import pytest

import coextra
from conftest import make_function


class C:
    def method(self):
        return 1


BAD_OBJECTS = [len, print, 1, None, types, "def f(): pass", object(), [].append, C]


# --- holder(), attach(), detach(), reset(), holders(), stats() -------------------

def test_holder_is_none_until_created_and_then_unique():
    f = make_function()
    assert coextra.holder(f) is None
    h = coextra.holder(f, create=True)
    assert isinstance(h, coextra.Holder)
    assert coextra.holder(f) is h
    assert coextra.holder(f, create=True) is h
    assert h.code is f.__code__


def test_function_code_and_bound_method_share_one_holder():
    obj = C()
    h = coextra.holder(obj.method, create=True)
    assert coextra.holder(C.method) is h
    assert coextra.holder(C.method.__code__) is h
    assert h.code is C.method.__code__


@pytest.mark.parametrize("bad", BAD_OBJECTS, ids=lambda o: type(o).__name__)
def test_every_obj_taking_function_rejects_other_objects(bad):
    with pytest.raises(TypeError, match="code object, a Python function or a bound method"):
        coextra.holder(bad)
    with pytest.raises(TypeError):
        coextra.holder(bad, create=True)
    with pytest.raises(TypeError):
        coextra.attach(bad, "product")
    with pytest.raises(TypeError):
        coextra.detach(bad)


def test_holder_argument_errors():
    f = make_function()
    with pytest.raises(TypeError):
        coextra.holder()
    with pytest.raises(TypeError):
        coextra.holder(f, True, True)
    with pytest.raises(TypeError):
        coextra.holder(f, creat=True)
    assert coextra.holder(f, create=False) is None
    assert coextra.holder(f, True) is coextra.holder(f)


def test_attach_adds_to_the_holder_of_obj():
    f = make_function()
    e1 = coextra.attach(f, "p1")
    e2 = coextra.attach(f.__code__, "p2", guard=lambda x: True)
    h = coextra.holder(f)
    assert isinstance(e1, coextra.Entry)
    assert h.entries == [e2, e1]
    assert e1.product == "p1" and e1.guard is None and e1.hits == 0
    assert callable(e2.guard)


def test_attach_rejects_a_guard_that_is_not_callable():
    f = make_function()
    with pytest.raises(TypeError, match="guard must be callable"):
        coextra.attach(f, "p", guard=3)


def test_detach_returns_whether_there_was_a_holder():
    f = make_function()
    assert coextra.detach(f) is False
    h = coextra.holder(f, create=True)
    assert coextra.detach(f) is True
    assert h.code is None
    assert coextra.holder(f) is None
    assert coextra.detach(f) is False


def test_a_detached_holder_works_as_a_container_and_is_never_attached_again():
    f = make_function()
    h = coextra.holder(f, create=True)
    coextra.detach(f)
    e = h.add("still works")
    assert h.lookup() is e and len(h) == 1
    fresh = coextra.holder(f, create=True)
    assert fresh is not h
    assert h.code is None and fresh.code is f.__code__


def test_reset_detaches_everything_and_counts():
    functions = [make_function(name="f") for _ in range(25)]
    hs = [coextra.holder(f, create=True) for f in functions]
    assert coextra.reset() == 25
    assert all(h.code is None for h in hs)
    assert coextra.holders() == []
    assert coextra.reset() == 0


def test_holders_lists_every_attached_holder():
    fs = [make_function() for _ in range(3)]
    hs = [coextra.holder(f, create=True) for f in fs]
    assert sorted(map(id, coextra.holders())) == sorted(map(id, hs))
    coextra.detach(fs[0])
    assert sorted(map(id, coextra.holders())) == sorted(map(id, hs[1:]))


def test_stats_counts_holders_and_entries():
    f, g = make_function(), make_function()
    coextra.attach(f, 1)
    coextra.attach(f, 2)
    coextra.attach(g, 3)
    s = coextra.stats()
    assert s["holders"] == 2
    assert s["entries"] == 3
    coextra.detach(f)
    s = coextra.stats()
    assert (s["holders"], s["entries"]) == (1, 1)


def test_stats_entries_follow_every_change_of_an_attached_holder():
    """stats()["entries"] is kept as holders change (not summed by stats()):
    adds, removal, eviction by max_entries, clear(), detach, and a detached
    holder's changes, which no longer count."""
    f = make_function()
    h = coextra.holder(f, create=True)
    entries = [h.add(i) for i in range(5)]
    assert coextra.stats()["entries"] == 5
    h.remove(entries[0])
    assert coextra.stats()["entries"] == 4
    h.max_entries = 2
    assert coextra.stats()["entries"] == 2
    h.clear()
    assert coextra.stats()["entries"] == 0
    h.max_entries = None
    h.add("x")
    h.add("y")
    coextra.detach(f)
    assert coextra.stats()["entries"] == 0
    h.add("z")
    h.clear()
    assert coextra.stats()["entries"] == 0
    g = make_function()
    coextra.attach(g, 1)
    assert coextra.stats()["entries"] == sum(len(x) for x in coextra.holders()) == 1


# --- Holder --------------------------------------------------------------------

def test_add_inserts_at_the_front_and_iteration_is_mru_first():
    h = coextra.holder(make_function(), create=True)
    a, b, c = h.add("a"), h.add("b"), h.add(product="c", guard=None)
    assert h.entries == [c, b, a]
    assert list(h) == [c, b, a]
    assert len(h) == 3


def test_add_argument_errors():
    h = coextra.holder(make_function(), create=True)
    with pytest.raises(TypeError):
        h.add()
    with pytest.raises(TypeError):
        h.add(1, None, 3)
    with pytest.raises(TypeError):
        h.add(1, gaurd=None)
    with pytest.raises(TypeError):
        h.add(1, product=2)


def test_lookup_returns_the_first_matching_entry_moves_it_to_front_and_counts():
    h = coextra.holder(make_function(), create=True)
    ints = h.add("ints", guard=lambda x: isinstance(x, int))
    strs = h.add("strs", guard=lambda x: isinstance(x, str))
    assert h.lookup(1) is ints
    assert h.entries == [ints, strs]
    assert ints.hits == 1
    assert h.lookup("s") is strs and strs.hits == 1
    assert h.lookup(1.5) is None
    assert h.entries == [strs, ints]


def test_lookup_passes_args_and_kwargs_to_guards():
    h = coextra.holder(make_function(), create=True)
    seen = []
    e = h.add("p", guard=lambda *a, **k: seen.append((a, k)) or True)
    assert h.lookup(1, 2, key="v") is e
    assert seen == [((1, 2), {"key": "v"})]


def test_an_entry_without_a_guard_always_matches():
    h = coextra.holder(make_function(), create=True)
    never = h.add("never", guard=lambda *a, **k: False)
    always = h.add("always")
    h.add("first", guard=lambda *a, **k: False)
    assert h.lookup(object(), k=1) is always
    assert h.entries[0] is always and never.hits == 0


def test_a_guard_exception_propagates_and_leaves_the_holder_unchanged():
    h = coextra.holder(make_function(), create=True)
    later = h.add("later")

    def boom(*args):
        raise KeyError("guard failed")

    raiser = h.add("raiser", guard=boom)
    before = h.entries
    with pytest.raises(KeyError, match="guard failed"):
        h.lookup(1)
    assert h.entries == before and later.hits == 0 and raiser.hits == 0


def test_guard_truthiness_errors_propagate():
    class Bad:
        def __bool__(self):
            raise ValueError("no truth")

    h = coextra.holder(make_function(), create=True)
    h.add("p", guard=lambda: Bad())
    with pytest.raises(ValueError, match="no truth"):
        h.lookup()


def test_lookup_on_an_empty_holder_is_none():
    assert coextra.holder(make_function(), create=True).lookup() is None


def test_remove_and_clear():
    h = coextra.holder(make_function(), create=True)
    a, b = h.add("a"), h.add("b")
    h.remove(a)
    assert h.entries == [b]
    with pytest.raises(ValueError):
        h.remove(a)
    with pytest.raises(TypeError):
        h.remove("not an entry")
    other = coextra.holder(make_function(), create=True)
    with pytest.raises(ValueError):
        other.remove(b)
    h.clear()
    assert len(h) == 0 and h.entries == []


def test_max_entries_evicts_the_least_recently_used():
    h = coextra.holder(make_function(), create=True)
    assert h.max_entries is None
    h.max_entries = 2
    a, b = h.add("a"), h.add("b")
    h.lookup()  # b is already first; touch a to make b the LRU
    h.remove(a)
    a = h.add("a")
    assert h.entries == [a, b]
    c = h.add("c")
    assert h.entries == [c, a]
    h.max_entries = 1
    assert h.entries == [c]
    h.max_entries = None
    for i in range(10):
        h.add(i)
    assert len(h) == 11


@pytest.mark.parametrize("bad", [0, -1, 2**32, 2**100])
def test_max_entries_rejects_out_of_range_ints_with_value_error(bad):
    h = coextra.holder(make_function(), create=True)
    with pytest.raises(ValueError):
        h.max_entries = bad
    assert h.max_entries is None


@pytest.mark.parametrize("bad", ["3", 2.0, True])
def test_max_entries_rejects_non_ints_with_type_error(bad):
    h = coextra.holder(make_function(), create=True)
    with pytest.raises(TypeError):
        h.max_entries = bad
    with pytest.raises(AttributeError):
        del h.max_entries


def test_entry_and_holder_attributes_are_read_only_and_types_not_constructible():
    h = coextra.holder(make_function(), create=True)
    e = h.add("p")
    for name in ("product", "guard", "hits"):
        with pytest.raises(AttributeError):
            setattr(e, name, 1)
    for name in ("code", "entries"):
        with pytest.raises(AttributeError):
            setattr(h, name, 1)
    with pytest.raises(TypeError):
        coextra.Holder()
    with pytest.raises(TypeError):
        coextra.Entry()


def test_reprs_say_what_they_are():
    f = make_function()
    h = coextra.holder(f, create=True)
    e = h.add([1])
    assert "entries=1" in repr(h) and "code object f" in repr(h)
    assert repr(e) == "<coextra.Entry product=list hits=0 guard=None>"
    assert repr(h.add((), guard=len)) == "<coextra.Entry product=tuple hits=0 guard=builtin_function_or_method>"
    coextra.detach(f)
    assert "detached" in repr(h)


def test_iteration_is_over_a_snapshot():
    h = coextra.holder(make_function(), create=True)
    for i in range(3):
        h.add(i)
    seen = []
    for e in h:
        seen.append(e.product)
        h.clear()
    assert seen == [2, 1, 0]


def test_type_stubs_and_marker_ship_with_the_package():
    import os

    pkg = os.path.dirname(coextra.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))
    assert os.path.exists(os.path.join(pkg, "_coextra.pyi"))
