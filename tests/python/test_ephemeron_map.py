"""coextra.EphemeronMap: a mutable mapping from weakly referenceable keys,
compared by identity, to values, whose entries live exactly as long as their
key is reachable from outside the values of every ephemeron map and code cache.

- The mapping API, its errors, and identity (not equality) of keys.
- A key that dies by reference counting takes its entry and value with it at
  once, without the GC.
- A key reachable only through values (its own, other entries', other maps',
  code caches') is found by ``coextra.collect()`` and its entry removed, after
  which the ordinary GC frees the rest; ``gc.collect()`` alone does the same
  when automatic collection is on. A key reachable from anything else keeps
  its entry. A ``weakref.WeakKeyDictionary`` (the control) leaks every such
  shape.
- Finalizers of values may use the map while an entry is being removed;
  threads, fork() and interpreter exit leave it consistent.

A collected shape is a function ``shape(m, m2, i)`` that builds one instance
in the maps ``m`` and ``m2`` and returns ``(watched, root, removed)``: the
objects that must die once the instance is garbage, the object that keeps the
instance alive in the live variant (the dead variant drops it), and how many
entries and holders ``coextra.collect()`` removes for it.
"""

from __future__ import annotations

import collections.abc
import copy
import functools
import gc
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
import types
import weakref

import pytest

import coextra
from conftest import in_child, make_function, subprocess_env

INSTANCES = 4


class Key:
    """A plain weakly referenceable key."""


class Plain:
    def __init__(self, value=None):
        self.value = value


class Same:
    """Equal to everything, with one hash: only identity tells two apart."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def problems(m) -> list:
    """Why m is not a consistent mapping ([] when it is). Returns instead of
    asserting, so that finalizers and threads can call it."""
    found = []
    items = list(m.items())
    if not (len(m) == len(items) == len(m.keys()) == len(m.values()) == len(list(m))):
        found.append(f"len {len(m)} but {len(items)} items")
    if len({id(k) for k, _ in items}) != len(items):
        found.append("a key appears twice")
    for k, v in items:
        if k is None:
            found.append(f"None is listed as a key (value {v!r})")
        elif k not in m or m.get(k, found) is not v:
            found.append(f"{k!r} is listed but not found")
    return found


# =============================================================================
# 1. The mapping API
# =============================================================================


def test_set_get_len_contains_and_delete():
    m = coextra.EphemeronMap()
    a, b = Key(), Key()
    value = Plain()
    m[a] = value
    m[b] = "b"
    assert len(m) == 2
    assert m[a] is value and m[b] == "b"
    assert a in m and b in m and Key() not in m
    del m[a]
    assert a not in m and len(m) == 1
    assert m.get(a) is None


def test_missing_keys_raise_key_error_naming_the_key():
    m = coextra.EphemeronMap()
    k = Key()
    for operation in (lambda: m[k], lambda: m.__delitem__(k), lambda: m.pop(k)):
        with pytest.raises(KeyError) as excinfo:
            operation()
        assert excinfo.value.args == (k,)


def test_get_and_pop_defaults():
    m = coextra.EphemeronMap()
    k, missing = Key(), Key()
    m[k] = "v"
    assert m.get(k) == "v" and m.get(k, "d") == "v"
    assert m.get(missing) is None and m.get(missing, "d") == "d"
    assert m.pop(missing, "d") == "d" and len(m) == 1
    assert m.pop(k) == "v" and k not in m and len(m) == 0
    assert m.pop(k, None) is None


def test_setdefault_sets_only_a_missing_key_and_returns_the_value():
    m = coextra.EphemeronMap()
    a, b = Key(), Key()
    assert m.setdefault(a) is None and a in m and m[a] is None
    assert m.setdefault(b, "first") == "first"
    assert m.setdefault(b, "second") == "first" and m[b] == "first"
    assert len(m) == 2


def numbered_map(n: int):
    """A map of n fresh keys, each to its index, and the keys."""
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(n)]
    for i, k in enumerate(keys):
        m[k] = i
    return m, keys


def test_popitem_removes_and_returns_each_pair_then_raises_when_empty():
    m, keys = numbered_map(5)
    popped = [m.popitem() for _ in keys]
    assert [v for _, v in popped] == [4, 3, 2, 1, 0], "the last added first, as dict.popitem"
    assert all(keys[v] is k for k, v in popped)
    assert len(m) == 0
    with pytest.raises(KeyError, match="the map is empty"):
        m.popitem()


def test_clear_removes_every_entry_and_frees_the_values():
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(10)]
    values = [Plain() for _ in keys]
    refs = [weakref.ref(v) for v in values]
    for k, v in zip(keys, values):
        m[k] = v
    del values, v
    m.clear()
    assert len(m) == 0 and not m.keys() and all(k not in m for k in keys)
    assert all(r() is None for r in refs)
    m[keys[0]] = "again"  # still usable
    assert m[keys[0]] == "again"


def test_setting_an_existing_key_replaces_the_value_and_frees_the_old_one():
    m = coextra.EphemeronMap()
    k = Key()
    old = Plain()
    old_ref = weakref.ref(old)
    m[k] = old
    del old
    m[k] = "new"
    assert old_ref() is None and m[k] == "new" and len(m) == 1


@pytest.mark.parametrize("key_is", ["new", "weakly referenced", "in another map", "a builtin type"])
def test_setting_a_key_again_replaces_its_value_whatever_else_references_it_weakly(key_is):
    # Builtin types are immortal keys whose weak references CPython 3.12+
    # keeps out of the object, in the interpreter's state.
    key = int if key_is == "a builtin type" else Key()
    kept = []
    if key_is == "weakly referenced":
        kept.append(weakref.ref(key))
    elif key_is == "in another map":
        kept.append(coextra.EphemeronMap({key: "other"}))
    m = coextra.EphemeronMap()
    m[key] = "first"
    m[key] = "second"
    assert len(m) == 1 and m[key] == "second" and list(m.items()) == [(key, "second")]
    m.setdefault(key, "third")
    m.update([(key, "fourth")])
    assert len(m) == 1 and m[key] == "fourth"
    if key_is == "in another map":
        assert kept[0][key] == "other" and len(kept[0]) == 1


def test_keys_are_compared_by_identity_not_equality():
    m = coextra.EphemeronMap()
    a, b = Same(), Same()
    assert a == b and hash(a) == hash(b)
    m[a] = "a"
    assert b not in m and m.get(b) is None
    m[b] = "b"
    assert len(m) == 2 and m[a] == "a" and m[b] == "b"
    del m[a]
    assert m[b] == "b" and a not in m


NOT_WEAKREFABLE = [1, "text", (1, 2), None]

KEY_OPERATIONS = {
    "setitem": lambda m, k: m.__setitem__(k, 1),
    "getitem": lambda m, k: m[k],
    "get": lambda m, k: m.get(k),
    "get_with_default": lambda m, k: m.get(k, 0),
    "delitem": lambda m, k: m.__delitem__(k),
    "pop": lambda m, k: m.pop(k),
    "pop_with_default": lambda m, k: m.pop(k, 0),
    "setdefault": lambda m, k: m.setdefault(k),
    "update": lambda m, k: m.update([(k, 1)]),
    "constructor": lambda m, k: coextra.EphemeronMap([(k, 1)]),
}


@pytest.mark.parametrize("operation", KEY_OPERATIONS.values(), ids=KEY_OPERATIONS.keys())
def test_keys_that_cannot_be_weakly_referenced_raise_type_error(operation):
    m = coextra.EphemeronMap()
    other = Key()
    m[other] = "other"  # a non-empty map, so that no early exit hides the check
    for key in NOT_WEAKREFABLE:
        expected = f"keys must support weak references, not {type(key).__name__}"
        with pytest.raises(TypeError, match=expected):
            operation(m, key)
    assert list(m.items()) == [(other, "other")]


@pytest.mark.parametrize("key", NOT_WEAKREFABLE, ids=lambda k: type(k).__name__)
def test_contains_is_false_for_keys_that_cannot_be_weakly_referenced(key):
    """As weakref.WeakKeyDictionary answers."""
    m = coextra.EphemeronMap()
    other = Key()
    m[other] = "other"
    assert (key in m) is False
    assert (key in weakref.WeakKeyDictionary()) is False
    # So do the views, and the set operations built on them, as dict's.
    assert (key in m.keys()) is False
    assert ((key, "other") in m.items()) is False
    assert m.items() & {(key, "other")} == set()
    assert m.items().isdisjoint([(key, "other")])
    assert ((key, "other") in dict.fromkeys([other], "other").items()) is False


def test_items_contains_answers_as_dicts_items_view():
    k, other = Key(), Key()
    value = [1]
    m = coextra.EphemeronMap([(k, value)])
    assert (k, value) in m.items() and (k, [1]) in m.items(), "the very value, or an equal one"
    assert (k, [2]) not in m.items() and (other, value) not in m.items()
    assert [k, value] not in m.items() and (k,) not in m.items() and k not in m.items(), \
        "only (key, value) tuples, as dict's"
    assert m.items() & {(k, 5), (other, 5)} == set()

    class Unequal:
        def __eq__(self, other):
            raise RuntimeError("no comparison")

    m[k] = Unequal()
    with pytest.raises(RuntimeError, match="no comparison"):
        (k, 0) in m.items()


def test_wrong_arguments_raise_type_error_or_value_error():
    m = coextra.EphemeronMap()
    k = Key()
    with pytest.raises(TypeError):
        m.get()
    with pytest.raises(TypeError):
        m.get(k, 1, 2)
    with pytest.raises(TypeError):
        m.pop()
    with pytest.raises(TypeError):
        m.setdefault()
    with pytest.raises(TypeError):
        m.update({}, {})
    with pytest.raises(TypeError):
        m.update(5)  # neither a mapping nor an iterable
    with pytest.raises(ValueError, match="pair"):
        m.update([(k,)])
    with pytest.raises(TypeError, match=r"^coextra: EphemeronMap\(\) takes no keyword arguments"):
        coextra.EphemeronMap(x=1)
    with pytest.raises(TypeError, match=r"^coextra: EphemeronMap\.update\(\) takes no keyword arguments"):
        m.update(x=1)
    with pytest.raises(TypeError, match=r"^coextra: EphemeronMap\.update\(\) takes no keyword arguments"):
        m.update({}, x=1)
    with pytest.raises(TypeError):
        coextra.EphemeronMap({}, {})
    assert len(m) == 0


def test_is_a_mutable_mapping():
    m = coextra.EphemeronMap()
    assert isinstance(m, collections.abc.MutableMapping)
    assert isinstance(m, collections.abc.Mapping)
    assert issubclass(coextra.EphemeronMap, collections.abc.MutableMapping)


def test_is_generic_in_annotations_like_dict():
    alias = coextra.EphemeronMap[Key, int]
    assert alias.__origin__ is coextra.EphemeronMap and alias.__args__ == (Key, int)


def test_keys_values_items_are_the_live_views_of_collections_abc():
    m = coextra.EphemeronMap()
    a, b, c = Key(), Key(), Key()
    m[a], m[b] = "a", "b"
    keys, values, items = m.keys(), m.values(), m.items()
    assert isinstance(keys, collections.abc.KeysView) and isinstance(values, collections.abc.ValuesView)
    assert isinstance(items, collections.abc.ItemsView)
    snapshot = list(items)
    m[c] = "c"
    del m[a]
    m[b] = "B"
    assert sorted((v, id(k)) for k, v in snapshot) == sorted([("a", id(a)), ("b", id(b))])
    assert len(keys) == 2 and b in keys and a not in keys and c in keys
    assert {id(k) for k in keys} == {id(b), id(c)}
    assert sorted(values) == ["B", "c"] and "B" in values
    assert (b, "B") in items and (a, "a") not in items
    assert {id(k): v for k, v in items} == {id(b): "B", id(c): "c"}
    # Set operations, as on any Mapping's keys() and items().
    assert keys - {c} == {b} and keys == coextra.EphemeronMap([(b, 0), (c, 0)]).keys()


def test_iteration_keys_values_and_items_follow_insertion_order_as_dict():
    m, keys = numbered_map(100)
    for k in keys[10:60]:
        del m[k]
    m[keys[0]] = "replaced"  # keeps its place
    del m[keys[1]]
    m[keys[1]] = "again"  # goes to the end
    expected = [keys[0]] + keys[2:10] + keys[60:] + [keys[1]]
    assert [id(k) for k in m] == [id(k) for k in expected]
    assert [id(k) for k in m.keys()] == [id(k) for k in expected]
    assert list(m.values()) == ["replaced"] + list(range(2, 10)) + list(range(60, 100)) + ["again"]
    assert [(id(k), v) for k, v in m.items()] == [(id(k), m[k]) for k in expected]


def test_keys_values_and_items_pass_over_entries_that_leave_during_the_iteration():
    m, keys = numbered_map(10)
    seen = []
    for k, v in m.items():
        seen.append(v)
        if v == 2:
            del m[keys[3]]  # deleted
            keys[4] = None  # its key dies
            m[keys[5]] = "new value"  # given when reached
            m[Key()] = "added"  # after the start: not visited (and dies at once)
    assert seen == [0, 1, 2, "new value", 6, 7, 8, 9]
    values = []
    for v in m.values():
        values.append(v)
        if v == 0:
            m.clear()
    assert values == [0]
    m.update((k, i) for i, k in enumerate(keys) if k is not None)
    visited = []
    for k in m:
        visited.append(k)
        if k is keys[0]:
            del m[keys[1]]
            keys[2] = None  # its key dies
    assert [id(k) for k in visited] == [id(k) for k in [keys[0], keys[3]] + keys[5:]]


def test_items_gives_each_pair_its_own_key_and_value_when_pairs_are_kept():
    m, keys = numbered_map(50)
    kept = list(m.items())  # every pair held: none reused
    assert [(id(k), v) for k, v in kept] == [(id(k), i) for i, k in enumerate(keys)]
    assert [v for _, v in m.items()] == list(range(50))  # each dropped at once: reused


def test_views_made_over_another_mapping_iterate_it_as_collections_abc_does():
    m = coextra.EphemeronMap()
    other = {"a": 1, "b": 2}
    assert list(type(m.keys())(other)) == ["a", "b"]
    assert list(type(m.values())(other)) == [1, 2]
    assert list(type(m.items())(other)) == [("a", 1), ("b", 2)]
    assert ("a", 1) in type(m.items())(other) and ("a", 2) not in type(m.items())(other)


def test_iteration_is_over_a_snapshot_so_mutating_meanwhile_is_safe():
    m, keys = numbered_map(20)
    added = []
    visited = []
    for k in m:
        visited.append(k)
        del m[k]
        new = Key()
        added.append(new)
        m[new] = "new"  # grows the table while iterating
    assert {id(k) for k in visited} == {id(k) for k in keys}, "the keys at the start, each once"
    assert len(m) == len(added) and all(m[k] == "new" for k in added)
    assert problems(m) == []


def test_iteration_never_visits_an_entry_added_where_a_removed_one_was():
    """Popping the last entry and adding another would put the new one where
    the old one was; an iteration in progress must not meet it, nor miss or
    repeat an entry when the table squeezes out a quarter of holes as it grows."""
    m, keys = numbered_map(200)
    added = []
    visited = []
    for k, v in m.items():
        visited.append(v)
        m.popitem()  # the last entry: keys[199] at first, then the one added below
        new = Key()
        added.append(new)
        m[new] = "added"
        for _ in range(3):  # churn: holes at the end, then growth
            extra = Key()
            added.append(extra)
            m[extra] = "added"
            del m[extra]
    assert visited == list(range(199)), "in order, each once, never an added one"
    assert problems(m) == []
    for k in m:  # a walk that ended unpins: the table squeezes holes again
        pass
    assert problems(m) == []


def test_update_and_the_constructor_take_mappings_and_iterables_of_pairs():
    a, b, c, d = Key(), Key(), Key(), Key()
    m = coextra.EphemeronMap({a: 1})
    m.update([(b, 2)])
    m.update(pair for pair in [(c, 3)])
    wkd = weakref.WeakKeyDictionary({d: 4})
    m.update(wkd)
    m.update()
    assert {id(k): v for k, v in m.items()} == {id(a): 1, id(b): 2, id(c): 3, id(d): 4}
    copy = coextra.EphemeronMap(m)
    assert {id(k): v for k, v in copy.items()} == {id(a): 1, id(b): 2, id(c): 3, id(d): 4}
    copy.update({a: "replaced"})
    assert copy[a] == "replaced" and m[a] == 1
    assert len(coextra.EphemeronMap()) == 0


class KeysRaises:
    """A mapping whose keys() fails inside with an AttributeError."""

    def keys(self):
        raise AttributeError("a bug inside keys()")

    def __iter__(self):
        return iter([(Key(), "taken as a pair")])


def test_update_and_the_constructor_report_an_error_raised_inside_keys():
    # dict's rule: only a missing `keys` attribute makes the argument an
    # iterable of pairs; an AttributeError from within keys() is the caller's bug.
    m = coextra.EphemeronMap()
    with pytest.raises(AttributeError, match="a bug inside keys"):
        m.update(KeysRaises())
    with pytest.raises(AttributeError, match="a bug inside keys"):
        coextra.EphemeronMap(KeysRaises())
    assert len(m) == 0
    with pytest.raises(AttributeError, match="a bug inside keys"):
        dict(KeysRaises())  # the behaviour matched


def test_maps_with_the_same_items_are_equal_as_mappings_are():
    a, b = Key(), Key()
    value = [1, 2]
    m = coextra.EphemeronMap([(a, value), (b, "b")])
    same = coextra.EphemeronMap([(b, "b"), (a, [1, 2])])  # values compared by ==
    assert m == same and not (m != same) and same == m
    assert m == {a: [1, 2], b: "b"} and {a: [1, 2], b: "b"} == m
    assert m == weakref.WeakKeyDictionary({a: [1, 2], b: "b"})
    assert weakref.WeakKeyDictionary({a: [1, 2], b: "b"}) == m
    assert m == m and coextra.EphemeronMap() == {}
    assert m != coextra.EphemeronMap([(a, value)]), "fewer items"
    assert m != coextra.EphemeronMap([(a, value), (b, "other")]), "another value"
    assert m != coextra.EphemeronMap([(a, value), (Key(), "b")]), "another key"
    assert m != [(a, value), (b, "b")] and m != None  # noqa: E711 (not mappings)
    with pytest.raises(TypeError):
        m < same


def test_equality_compares_keys_by_identity():
    # Two equal but distinct keys are two keys, in == as in lookups.
    a, b = Same(), Same()
    assert a == b
    m = coextra.EphemeronMap([(a, 1)])
    assert m != coextra.EphemeronMap([(b, 1)])
    assert m != {b: 1} and {b: 1} != m


@pytest.mark.parametrize("kind", [coextra.EphemeronMap, weakref.WeakKeyDictionary])
def test_while_a_key_dies_the_map_equals_its_own_items_as_weak_key_dictionary_does(kind):
    """In a weak reference callback run while a key dies, its entry is still
    counted by len() but no longer iterated: == goes by the entries iterated."""
    m = kind()
    other = Key()
    m[other] = 2
    seen = []

    def look(_):
        seen.append((len(m), list(m.items()), m == dict(m.items()), m == m.copy()))

    dying = Key()
    m[dying] = 1
    watch = weakref.ref(dying, look)  # newer callbacks run first: before the map's own
    del dying
    assert seen == [(2, [(other, 2)], True, True)]
    assert len(m) == 1 and watch() is None


def test_a_map_is_unhashable_as_a_dict_is():
    assert coextra.EphemeronMap.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(coextra.EphemeronMap())
    assert not isinstance(coextra.EphemeronMap(), collections.abc.Hashable)


def test_copy_is_a_new_map_with_the_same_entries():
    a, b = Key(), Key()
    value = Plain()
    m = coextra.EphemeronMap([(a, value), (b, 2)])
    duplicate = m.copy()
    assert type(duplicate) is coextra.EphemeronMap and duplicate is not m
    assert duplicate == m and duplicate[a] is value  # shallow, as dict.copy
    duplicate[a] = "changed"
    del duplicate[b]
    assert m[a] is value and m[b] == 2 and len(duplicate) == 1
    assert coextra.EphemeronMap().copy() == {}
    # The copy's entries are ephemerons too: the key's death removes them.
    del a
    assert len(duplicate) == 0 and len(m) == 1


def test_copy_copy_is_the_maps_copy():
    a = Key()
    value = Plain()
    m = coextra.EphemeronMap([(a, value)])
    shallow = copy.copy(m)
    assert type(shallow) is coextra.EphemeronMap and shallow is not m
    assert shallow == m and shallow[a] is value


def test_deepcopy_keeps_the_keys_and_copies_the_values_as_weak_key_dictionary_does():
    a, b = Key(), Key()
    m = coextra.EphemeronMap([(a, [1, [2]]), (b, "s")])
    deep = copy.deepcopy(m)
    assert type(deep) is coextra.EphemeronMap and deep is not m
    assert list(deep) == [a, b], "the same key objects, in the same order"
    assert deep[a] == [1, [2]] and deep[a] is not m[a] and deep[a][1] is not m[a][1]
    reference = weakref.WeakKeyDictionary([(a, [1, [2]]), (b, "s")])
    assert dict(copy.deepcopy(reference)) == dict(deep)
    # A value that references the map references the copy.
    m[a] = [m]
    deep = copy.deepcopy(m)
    assert deep[a][0] is deep
    # The copy's entries are ephemerons too.
    del a
    assert len(deep) == 1 and len(m) == 1


def test_deepcopy_propagates_an_error_copying_a_value():
    class Uncopyable:
        def __deepcopy__(self, memo):
            raise RuntimeError("no copies")

    key = Key()
    m = coextra.EphemeronMap([(key, Uncopyable())])
    with pytest.raises(RuntimeError, match="no copies"):
        copy.deepcopy(m)


def test_or_makes_a_new_map_from_either_side_as_weak_key_dictionary_does():
    a, b, c = Key(), Key(), Key()
    m = coextra.EphemeronMap([(a, 1), (b, 2)])
    merged = m | {b: 20, c: 30}
    assert type(merged) is coextra.EphemeronMap
    assert list(merged.items()) == [(a, 1), (b, 20), (c, 30)], "the right side wins, as in dict"
    assert list(m.items()) == [(a, 1), (b, 2)], "the operands are unchanged"
    reflected = {b: 20, c: 30} | m
    assert type(reflected) is coextra.EphemeronMap
    assert list(reflected.items()) == [(b, 2), (c, 30), (a, 1)]
    both = m | coextra.EphemeronMap([(c, 3)])
    assert list(both.items()) == [(a, 1), (b, 2), (c, 3)]
    reference = weakref.WeakKeyDictionary(m)
    assert dict(reference | {b: 20, c: 30}) == dict(merged)
    assert dict({b: 20, c: 30} | reference) == dict(reflected)


def test_or_with_what_is_not_a_mapping_is_a_type_error():
    key = Key()
    m = coextra.EphemeronMap([(key, 1)])
    with pytest.raises(TypeError, match="unsupported operand"):
        m | [(key, 2)]
    with pytest.raises(TypeError, match="unsupported operand"):
        5 | m
    with pytest.raises(TypeError, match="keys must support weak references, not str"):
        m | {"name": 1}


def test_ior_updates_in_place_from_a_mapping_or_pairs():
    a, b = Key(), Key()
    m = coextra.EphemeronMap([(a, 1)])
    same = m
    m |= {b: 2}
    m |= [(a, 10)]
    assert m is same and list(m.items()) == [(a, 10), (b, 2)]
    with pytest.raises(TypeError, match="not iterable"):
        m |= 5
    with pytest.raises(TypeError, match="keys must support weak references"):
        m |= {"name": 1}


def test_repr_counts_the_entries():
    m = coextra.EphemeronMap()
    assert repr(m) == "<coextra.EphemeronMap with 0 entries>"
    k1, k2 = Key(), Key()
    m[k1] = 1
    assert repr(m) == "<coextra.EphemeronMap with 1 entry>"
    m[k2] = 2
    assert repr(m) == "<coextra.EphemeronMap with 2 entries>"


def test_stats_count_maps_and_entries():
    before = coextra.stats()
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(3)]
    for k in keys:
        m[k] = "v"
    s = coextra.stats()
    assert s["ephemeron_maps"] == before["ephemeron_maps"] + 1
    assert s["ephemeron_entries"] == before["ephemeron_entries"] + 3
    assert s["ephemeron_entries_alive"] == before["ephemeron_entries_alive"] + 3
    del m[keys[0]]
    assert coextra.stats()["ephemeron_entries"] == before["ephemeron_entries"] + 2
    del m
    s = coextra.stats()
    assert s["ephemeron_maps"] == before["ephemeron_maps"]
    assert s["ephemeron_entries"] == before["ephemeron_entries"]
    assert s["ephemeron_entries_alive"] == before["ephemeron_entries_alive"]


def crowded_key_type(others: list) -> type:
    """A key type whose keys are also weakly referenced elsewhere: in each
    map of `others` and by plain weak references. crowd() adds weak
    references made after the key's entry in some map, which CPython lists
    before that entry: the map then finds the entry through its index, not
    through the key's list of weak references."""

    class CrowdedKey(Key):
        def __init__(self):
            self.refs = [weakref.ref(self)]
            for other in others:
                other[self] = "other"

        def crowd(self):
            self.refs += [weakref.ref(self, lambda r: None) for _ in range(4)]

    return CrowdedKey


@pytest.mark.parametrize("crowded", [False, True], ids=["plain keys", "keys weakly referenced elsewhere"])
def test_random_operations_agree_with_a_dict_keyed_by_identity(crowded):
    """The table (insertion order, holes, reused positions, growth and
    rebuilt indexes) against a model, a dict in insertion order as the map
    is, with keys that die by reference counting meanwhile. Crowded, the keys
    are in other maps too and weakly referenced after their entry is made:
    the map finds them through its index, not their list of weak references."""
    others = [coextra.EphemeronMap() for _ in range(4)] if crowded else []
    key_type = crowded_key_type(others) if crowded else Key
    rng = random.Random(20240601)
    m = coextra.EphemeronMap()
    model: dict = {}  # id(key) -> (key, value)
    pool = [key_type() for _ in range(150)]
    for step in range(6000):
        op = rng.random()
        k = rng.choice(pool)
        if op < 0.35:
            value = ("v", step)
            m[k] = value
            model[id(k)] = (k, value)
            if crowded:
                k.crowd()
        elif op < 0.55:
            expected = model.pop(id(k), (None, "missing"))[1]
            assert m.pop(k, "missing") == expected
        elif op < 0.7:
            assert m.get(k, "missing") == model.get(id(k), (None, "missing"))[1]
            assert (k in m) == (id(k) in model)
        elif op < 0.8:
            value = ("d", step)
            assert m.setdefault(k, value) == model.setdefault(id(k), (k, value))[1]
            if crowded:
                k.crowd()
        elif op < 0.95:  # the key dies: its entry goes with it
            i = pool.index(k)
            model.pop(id(k), None)
            pool[i] = key_type()
            del k
        elif op < 0.995 and model:
            key, value = m.popitem()
            assert id(key) == next(reversed(model)), "the last added"
            assert model.pop(id(key)) == (key, value)
            del key
        else:
            m.clear()
            model.clear()
        assert len(m) == len(model), f"step {step}"
        if step % 97 == 0:
            assert [(id(k), v) for k, v in m.items()] == [(i, v) for i, (_, v) in model.items()]
    assert problems(m) == []
    for other in others:  # every pool key, none of the dead ones
        assert len(other) == len(pool) and all(other[k] == "other" for k in pool)


@pytest.mark.parametrize("maps", [1, 2, 8])
@pytest.mark.parametrize("plain_refs", [0, 1, 8])
def test_a_key_in_many_maps_and_weakly_referenced_often_has_its_own_value_in_each(maps, plain_refs):
    """Each map finds its own entry of a key, however many weak references
    (other maps' entries, plain references, before and after) it has."""
    key = Key()
    refs = [weakref.ref(key, lambda r: None) for _ in range(plain_refs // 2)]
    ms = [coextra.EphemeronMap() for _ in range(maps)]
    for i, m in enumerate(ms):
        assert key not in m and m.get(key) is None
        m[key] = i
    refs += [weakref.ref(key, lambda r: None) for _ in range(plain_refs - plain_refs // 2)]
    assert [m[key] for m in ms] == list(range(maps))
    del ms[0][key]
    assert key not in ms[0] and [key in m for m in ms[1:]] == [True] * (maps - 1)
    ms[0][key] = "again"
    ms[-1][key] = "replaced"
    assert ms[0][key] == ("replaced" if maps == 1 else "again") and ms[-1][key] == "replaced"
    assert all(len(m) == 1 for m in ms) and all(problems(m) == [] for m in ms)
    del key
    assert all(len(m) == 0 for m in ms)
    assert all(r() is None for r in refs)


def test_a_key_whose_removed_entry_is_still_held_is_found_by_its_new_entry():
    m = coextra.EphemeronMap()
    k = Key()
    m[k] = "first"
    held = [r for r in weakref.getweakrefs(k) if r() is k]
    del m[k]
    assert k not in m
    m[k] = "second"  # a new entry, listed before or after the held one
    assert m[k] == "second" and len(m) == 1
    del m[k]
    assert k not in m and len(held) == 1


# --- explain --------------------------------------------------------------------


def test_explain_gives_the_path_from_the_entry_back_to_the_key():
    m = coextra.EphemeronMap()
    k = Key()
    value = Plain([k])
    m[k] = value
    paths = coextra.explain(k, m)
    assert paths, "there is a path entry -> value -> ... -> key"
    shortest = paths[0]
    assert isinstance(shortest[0], weakref.ref) and shortest[0]() is k, "the entry (a weak reference to k)"
    assert shortest[1] is value
    assert any(step is value.value for step in shortest), "the list is a hop"
    assert shortest[-1] is k


def test_explain_follows_other_entries():
    m = coextra.EphemeronMap()
    a, b = Key(), Key()
    m[a] = [b]
    m[b] = [a]
    paths = coextra.explain(a, m)
    assert paths and paths[0][-1] is a
    assert any(step is b for step in paths[0]), "a -> [b] -> b -> b's entry -> [a] -> a"


def test_explain_is_empty_without_an_entry_or_a_path():
    m = coextra.EphemeronMap()
    k = Key()
    assert coextra.explain(k, m) == []
    m[k] = ("no", "reference")
    assert coextra.explain(k, m) == []
    assert coextra.explain(Key(), m) == []


def test_explain_rejects_a_map_that_is_not_an_ephemeron_map():
    with pytest.raises(TypeError, match="map must be None or an EphemeronMap, not dict"):
        coextra.explain(Key(), {})


# =============================================================================
# 2. Collected shapes, and 3. the same shapes kept while their root lives
# =============================================================================


def runtime_class(i, bases=()):
    return type(f"Runtime{i}", bases, {"__module__": __name__})


class WithMethod:
    def method(self):
        return self


def shape_value_is_the_key(m, m2, i):
    k = Key()
    m[k] = k
    return [k], k, 1


def shape_key_in_a_list(m, m2, i):
    k = Key()
    m[k] = ["compiled", k]
    return [k], k, 1


def shape_key_in_a_dict(m, m2, i):
    k = Key()
    m[k] = {"key": k, "n": i}
    return [k], k, 1


def shape_closure_over_the_key(m, m2, i):
    k = Key()
    m[k] = lambda: k
    return [k], k, 1


def shape_functools_partial_over_the_key(m, m2, i):
    k = Key()
    m[k] = functools.partial(print, k)
    return [k], k, 1


def shape_bound_method_of_the_key(m, m2, i):
    k = WithMethod()
    m[k] = k.method
    return [k], k, 1


def shape_class_key_with_an_instance_value(m, m2, i):
    cls = runtime_class(i)
    m[cls] = cls()
    return [cls], cls, 1


def shape_class_key_with_a_subclass_value(m, m2, i):
    cls = runtime_class(i)
    m[cls] = runtime_class(i, (cls,))
    return [cls], cls, 1


def shape_runtime_module_key(m, m2, i):
    module = types.ModuleType(f"coextra_test_ephemeron_runtime_{i}")
    assert module.__name__ not in sys.modules
    m[module] = types.SimpleNamespace(module=module)
    return [module], module, 1


class Namespace(types.SimpleNamespace):
    """types.SimpleNamespace itself cannot be weakly referenced; a subclass can."""


def shape_simple_namespace_key(m, m2, i):
    ns = Namespace(n=i)
    m[ns] = {"namespace": ns}
    return [ns], ns, 1


def shape_code_object_key(m, m2, i):
    f = make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}")
    m[f.__code__] = [f.__code__]
    return [f.__code__], f, 1


def shape_code_object_key_in_a_tuple_value(m, m2, i):
    """A tuple of atoms reaches nothing the collector follows; one that holds a
    code object does."""
    f = make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}")
    m[f.__code__] = ("code", f.__code__)
    return [f.__code__], f, 1


def shape_entries_referencing_each_others_keys(m, m2, i):
    a, b = Key(), Key()
    m[a] = [b]
    m[b] = [a]
    return [a, b], a, 2


def shape_entries_of_two_maps_referencing_each_others_keys(m, m2, i):
    a, b = Key(), Key()
    m[a] = Plain(b)
    m2[b] = Plain(a)
    return [a, b], a, 2


def shape_keys_sharing_a_value_that_references_them(m, m2, i):
    a, b = Key(), Key()  # both entries hold the one list: seeded by it in automatic passes
    shared = [a, b]
    m[a] = shared
    m[b] = shared
    return [a, b], a, 2


def shape_keys_of_two_maps_sharing_a_closure_over_them(m, m2, i):
    a, b = Key(), Key()

    def both():
        return a, b

    m[a] = both
    m2[b] = both
    return [a, b, both], a, 2


def shape_key_reached_through_another_entry_of_the_same_map(m, m2, i):
    a, b, c = Key(), Key(), Key()  # a -> [b] -> b's entry -> [c] -> c's entry -> [a]
    m[a] = [b]
    m[b] = [c]
    m[c] = [a]
    return [a, b, c], a, 3


def shape_cycle_through_a_code_cache(m, m2, i):
    """key -> its entry -> function -> code -> holder -> product -> key."""
    f = make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}")
    k = Key()
    coextra.attach(f, [k])
    m[k] = [f]
    return [k, f.__code__], k, 2  # one entry and one holder


def shape_cycle_through_a_code_cache_from_a_tuple_value(m, m2, i):
    """key -> its entry -> (code,) -> code -> holder -> product -> key."""
    f = make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}")
    k = Key()
    coextra.attach(f, [k])
    m[k] = (f.__code__,)
    return [k, f.__code__], k, 2


SHAPES = [value for name, value in sorted(globals().items()) if name.startswith("shape_")]
SHAPE_IDS = [s.__name__[len("shape_"):] for s in SHAPES]


def build(shape, m, m2):
    watched, roots, removed = [], [], 0
    for i in range(INSTANCES):
        objects, root, count = shape(m, m2, i)
        watched.extend(weakref.ref(o) for o in objects)
        roots.append(root)
        removed += count
        del objects, root
    return watched, roots, removed


def alive(watched):
    return [r for r in watched if r() is not None]


@pytest.mark.usefixtures("explicit_collection_only")
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dead_shape_stays_until_collect_removes_it(shape):
    m, m2 = coextra.EphemeronMap(), coextra.EphemeronMap()
    watched, roots, removed = build(shape, m, m2)
    entries = len(m) + len(m2)
    before = coextra.stats()["ephemeron_removed_by_collector"]
    del roots
    gc.collect()
    assert len(m) + len(m2) == entries, "the GC alone removes nothing"
    assert len(alive(watched)) == len(watched), "the keys are reachable through the values"
    assert coextra.collect() == removed
    assert len(m) + len(m2) == 0
    assert coextra.stats()["ephemeron_removed_by_collector"] == before + entries
    gc.collect()
    assert alive(watched) == []
    assert problems(m) == [] and problems(m2) == []


@pytest.mark.usefixtures("explicit_collection_only")
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_live_shape_keeps_every_entry(shape):
    m, m2 = coextra.EphemeronMap(), coextra.EphemeronMap()
    watched, roots, removed = build(shape, m, m2)
    entries = len(m) + len(m2)
    gc.collect()
    assert coextra.collect() == 0
    gc.collect()
    assert len(m) + len(m2) == entries
    assert len(alive(watched)) == len(watched)
    del roots  # and once the roots go, the same entries are garbage
    gc.collect()
    assert coextra.collect() == removed


# --- kept -------------------------------------------------------------------------


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_while_a_variable_holds_the_key():
    m = coextra.EphemeronMap()
    k = Key()
    m[k] = [k]
    assert coextra.collect() == 0
    gc.collect()
    assert m[k][0] is k and len(m) == 1


@pytest.mark.usefixtures("explicit_collection_only")
@pytest.mark.parametrize("key_is", ["module_attribute", "the_module_itself"])
def test_kept_while_a_module_in_sys_modules_holds_the_key(key_is):
    module = types.ModuleType("coextra_test_ephemeron_module")
    m = coextra.EphemeronMap()
    sys.modules[module.__name__] = module
    try:
        if key_is == "module_attribute":
            module.key = Key()
            m[module.key] = Plain(module.key)
            key_ref = weakref.ref(module.key)
        else:
            m[module] = [module]
            key_ref = weakref.ref(module)
        assert coextra.collect() == 0
        assert key_ref() in m and len(m) == 1
    finally:
        del sys.modules[module.__name__]
    del module
    gc.collect()
    assert coextra.collect() == 1
    gc.collect()
    assert key_ref() is None and len(m) == 0


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_while_a_suspended_generator_holds_the_key_in_a_local():
    def holding(key):
        yield
        yield key

    m = coextra.EphemeronMap()
    k = Key()
    m[k] = Plain(k)
    key_ref = weakref.ref(k)
    generator = holding(k)
    next(generator)
    del k
    assert coextra.collect() == 0, "the generator's frame holds the key"
    assert key_ref() in m
    generator.close()
    del generator
    assert len(m) == 1, "the value still holds the key: only the collector can tell"
    assert coextra.collect() == 1
    gc.collect()
    assert key_ref() is None


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_while_the_running_frame_holds_the_key():
    m = coextra.EphemeronMap()
    box = [Key()]
    m[box[0]] = [box[0]]

    def run():
        key = box.pop()  # the only outside reference is this frame's local
        gc.collect()
        return coextra.collect(), key in m

    assert run() == (0, True)
    assert coextra.collect() == 1 and len(m) == 0


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_while_the_key_of_a_live_entry_reaches_it():
    """A is alive outside, A's value references B, B's value references B:
    B stays. Once A dies by reference counting, B is garbage."""
    m = coextra.EphemeronMap()
    a, b = Key(), Key()
    m[a] = [b]
    m[b] = [b]
    b_ref = weakref.ref(b)
    del b
    assert coextra.collect() == 0
    gc.collect()
    assert len(m) == 2 and m[b_ref()] == [b_ref()] and m[a][0] is b_ref()
    del a  # its entry goes at once; [b] with it
    assert len(m) == 1 and b_ref() is not None
    assert coextra.collect() == 1
    gc.collect()
    assert b_ref() is None and len(m) == 0


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_while_a_live_entry_of_another_map_reaches_it():
    m, m2 = coextra.EphemeronMap(), coextra.EphemeronMap()
    a, b = Key(), Key()
    m[a] = Plain(b)
    m2[b] = Plain(b)
    b_ref = weakref.ref(b)
    del b
    assert coextra.collect() == 0 and len(m2) == 1
    del a
    assert coextra.collect() == 1 and len(m2) == 0
    gc.collect()
    assert b_ref() is None


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_while_a_live_code_cache_reaches_it():
    m = coextra.EphemeronMap()
    f = make_function()
    k = Key()
    coextra.attach(f, ("compiled", k))
    m[k] = [k]
    key_ref = weakref.ref(k)
    del k
    assert coextra.collect() == 0, "f is alive, so is its cache, so is the key"
    assert len(m) == 1
    del f
    gc.collect()  # frees f and its code; the holder goes with the code
    assert coextra.collect() == 1 and len(m) == 0
    gc.collect()
    assert key_ref() is None


@pytest.mark.usefixtures("explicit_collection_only")
def test_kept_when_its_value_references_a_code_object_an_earlier_pass_seeded():
    """A pass with no holder to seed (only map keys) must not reuse what an
    earlier pass knew of code objects: here f's code, seeded by the first
    pass, is referenced by the value of a key that a variable holds."""
    f = make_function()
    coextra.attach(f, "product")
    assert coextra.collect() == 0  # a pass seeded with f's code
    assert coextra.detach(f)  # no holder left: the next pass seeds map keys only
    m = coextra.EphemeronMap()
    key = Key()
    m[key] = [f.__code__]
    assert coextra.collect() == 0, "the key is alive: its entry must stay"
    assert key in m and m[key] == [f.__code__]


@pytest.mark.usefixtures("automatic_collection_on")
def test_automatic_collection_keeps_an_entry_whose_value_references_a_cached_code():
    """As above, through a generation pass over the maps alone (every holder
    old): a live function with a cache, and a live key whose value references
    its code."""
    f = make_function()
    coextra.attach(f, "product")
    assert coextra.collect() == 0  # f's holder is old now
    m = coextra.EphemeronMap()
    key = Key()
    m[key] = [f.__code__]
    gc.collect()
    assert key in m, "the key is alive: its entry must stay"
    assert coextra.holder(f) is not None


def test_a_map_only_pass_after_a_large_pass_is_safe():
    """In a child interpreter (a crash must not end the suite): a large pass
    seeds the codes of many holders; after reset(), a pass over a map whose
    live key's value references one of those codes keeps the entry. Several
    rounds of growing size, so that what a wrong node index reaches differs."""
    script = textwrap.dedent(
        """
        import coextra
        coextra.set_auto_collect(False)

        class Key:
            pass

        results = []
        for round in range(6):
            functions = []
            for i in range(300 + 100 * round):
                ns = {}
                exec(f"def f{i}(x):\\n    return x\\n", ns)
                coextra.attach(ns[f"f{i}"], [[[] for _ in range(10)] for _ in range(20)])
                functions.append(ns[f"f{i}"])
            assert coextra.collect() == 0
            coextra.reset()
            m = coextra.EphemeronMap()
            key = Key()
            m[key] = [functions[-1].__code__]
            results.append((coextra.collect(), key in m))
            del m, key, functions
        print(results)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(), timeout=60
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr}"
    assert proc.stdout == str([(0, True)] * 6) + "\n" and proc.stderr == ""


# =============================================================================
# 4. The control: a WeakKeyDictionary leaks every one of these shapes
# =============================================================================

# A SimpleNamespace is unhashable: a WeakKeyDictionary cannot hold it at all.
CONTROL_SHAPES = [s for s in SHAPES if s is not shape_simple_namespace_key]


@pytest.mark.parametrize("shape", CONTROL_SHAPES, ids=[s.__name__[len("shape_"):] for s in CONTROL_SHAPES])
def test_weak_key_dictionary_leaks_the_same_shape(shape):
    m, m2 = weakref.WeakKeyDictionary(), weakref.WeakKeyDictionary()
    watched, roots, _ = build(shape, m, m2)
    entries = len(m) + len(m2)
    del roots
    gc.collect()
    coextra.collect()
    gc.collect()
    assert len(alive(watched)) == len(watched), "the WeakKeyDictionary must leak: it is the control"
    assert len(m) + len(m2) == entries
    m.clear()
    m2.clear()
    gc.collect()
    coextra.collect()  # the code cache shape: its holder goes with its code
    gc.collect()
    assert alive(watched) == []


# =============================================================================
# 5. Death by reference counting
# =============================================================================


@pytest.fixture
def gc_disabled():
    enabled = gc.isenabled()
    gc.disable()
    yield
    if enabled:
        gc.enable()


@pytest.mark.usefixtures("gc_disabled")
def test_entry_and_value_go_at_once_when_the_key_dies():
    m = coextra.EphemeronMap()
    keep, k = Key(), Key()
    m[keep] = "kept"
    value = Plain(["payload"])
    value_ref = weakref.ref(value)
    m[k] = value
    entries = coextra.stats()["ephemeron_entries"]
    del value
    del k
    assert len(m) == 1 and list(m.keys()) == [keep]
    assert value_ref() is None, "the value is freed with the entry, no GC needed"
    assert coextra.stats()["ephemeron_entries"] == entries - 1


@pytest.mark.usefixtures("gc_disabled")
def test_many_keys_dying_leave_the_table_consistent():
    m, keys = numbered_map(500)
    survivors = keys[::3]
    del keys  # two thirds die, in insertion order
    assert len(m) == len(survivors)
    assert all(m[k] == i * 3 for i, k in enumerate(survivors))
    assert problems(m) == []


@pytest.mark.usefixtures("gc_disabled")
def test_a_map_that_dies_first_frees_its_values_and_leaves_its_keys_alone():
    m = coextra.EphemeronMap()
    k = Key()
    value = Plain()
    value_ref, map_ref = weakref.ref(value), weakref.ref(m)
    m[k] = value
    del value, m
    assert map_ref() is None and value_ref() is None
    assert weakref.getweakrefcount(k) == 0
    del k  # no entry, no callback left to call


def test_an_entry_held_from_outside_owns_nothing_once_it_leaves_its_map():
    """An entry is a weak reference to its key (weakref.getweakrefs lists it):
    holding one keeps neither the value of a removed entry nor the map."""
    m = coextra.EphemeronMap()
    k = Key()
    value = Plain()
    value_ref = weakref.ref(value)
    m[k] = value
    del value
    entries = [r for r in weakref.getweakrefs(k) if r() is k]
    assert len(entries) == 1
    del m[k]
    assert value_ref() is None
    m[k] = Plain()
    map_ref = weakref.ref(m)
    del m
    gc.collect()
    assert map_ref() is None
    del k  # the held entries' key dies after their map: nothing to remove
    assert entries[0]() is None
    del entries


def test_a_map_referenced_only_by_its_own_values_is_ordinary_garbage():
    m = coextra.EphemeronMap()
    k = Key()
    m[k] = (m, k)
    map_ref, key_ref = weakref.ref(m), weakref.ref(k)
    del m, k
    gc.collect()
    assert map_ref() is None and key_ref() is None


def test_a_dying_key_is_gone_from_the_map_for_its_other_weakref_callbacks():
    """A weak reference callback of the same key that runs before the entry's
    (one made after the entry) sees the map without the dying key: no
    snapshot or iteration yields it (or None in its place). (len() may still
    count it there, as WeakKeyDictionary's does.)"""
    m = coextra.EphemeronMap()
    k, other = Key(), Key()
    m[k] = "dying"
    m[other] = "other"
    seen = []

    def callback(ref):
        seen.append((list(m.keys()), list(m.values()), list(m.items()), list(m)))

    watcher = weakref.ref(k, callback)
    del k
    assert len(seen) == 1
    keys, values, items, iterated = seen[0]
    assert None not in keys and None not in iterated and all(key is not None for key, _ in items)
    assert keys == [other] and values == ["other"] and items == [(other, "other")] and iterated == [other]
    assert list(m.items()) == [(other, "other")], "and once the callbacks ran, the entry is gone"
    del watcher


def test_popitem_never_returns_a_dying_key():
    m = coextra.EphemeronMap()
    k, other = Key(), Key()
    m[k] = "dying"
    m[other] = "other"
    popped = []

    def callback(ref):
        while True:
            try:
                popped.append(m.popitem())
            except KeyError:
                return

    watcher = weakref.ref(k, callback)
    del k
    assert popped == [(other, "other")]
    assert len(m) == 0
    del watcher


def run_in_child(script: str) -> str:
    """Runs script in a new interpreter; its output, once it exited 0 (a crash
    fails the test, not the whole suite)."""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(), timeout=120
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout


class SetKey(set):
    """A key whose weak references outlive the start of its deallocation:
    subtype_dealloc releases __dict__ before set's dealloc clears them."""


def test_a_key_being_deallocated_is_neither_listed_nor_explored():
    # Code that runs while the key's __dict__ is released (its reference count
    # is 0, its entry still there) must not see the key: listing it would
    # resurrect a dying object, a collector pass would explore freed memory.
    m = coextra.EphemeronMap()
    seen = []

    class Witness:
        def __del__(self):
            seen.append((list(m.keys()), [k for k, _ in m.items()], list(m), coextra.collect()))

    k = SetKey()
    k.before = [[i] for i in range(50)]
    k.witness = Witness()
    k.after = [[i] for i in range(50)]
    m[k] = "v"
    del k
    assert seen == [([], [], [], 0)]
    assert len(m) == 0


def test_a_map_as_a_key_is_collected_when_only_its_value_holds_it():
    outer = coextra.EphemeronMap()
    inner = coextra.EphemeronMap()
    outer[inner] = [inner]
    alive = weakref.ref(inner)
    del inner
    assert coextra.collect() == 1
    gc.collect()
    assert alive() is None and len(outer) == 0


def test_a_long_chain_of_maps_is_freed_without_deep_recursion():
    # Each map is the value of the previous one's entry: freeing the head
    # frees the chain, which needs the trashcan (as lists and dicts have).
    script = textwrap.dedent(
        """
        import coextra

        class K:
            pass

        keys = []
        head = m = coextra.EphemeronMap()
        for _ in range(200_000):
            k = K()
            keys.append(k)
            m[k] = m = coextra.EphemeronMap()
        del m
        del head
        print("freed")
        """
    )
    assert run_in_child(script) == "freed\n"


@pytest.mark.parametrize("clear_first", [False, True], ids=["set", "clear-then-set"])
def test_a_gc_pass_in_the_entry_allocation_that_sets_the_same_key_leaves_one_entry(clear_first):
    # 3.10/3.11 run the GC inside allocations: a callback of that pass may
    # set the key whose entry m[key] = ... is making (after emptying the map,
    # which must not make the table look unchanged).
    m = coextra.EphemeronMap()
    other, key = Key(), Key()
    m[other] = "other"  # one entry before: an emptied and refilled table has as many
    ran = []

    def during_gc(phase, info):
        if phase == "start" and not ran:
            ran.append(True)
            if clear_first:
                m.clear()
            m[key] = "from the gc pass"

    threshold = gc.get_threshold()
    gc.callbacks.append(during_gc)
    try:
        gc.set_threshold(1)
        m[key] = "mine"
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(during_gc)
    if not ran:
        pytest.skip("no GC pass ran inside the allocation (3.12+ runs it at the eval breaker)")
    assert m[key] == "mine"
    assert len(m) == (1 if clear_first else 2)
    assert [id(k) for k in m] == ([id(key)] if clear_first else [id(other), id(key)])
    assert problems(m) == []


def test_popitem_holds_key_and_value_while_a_gc_pass_in_its_allocation_clears_the_map():
    # 3.10/3.11 run the GC inside allocations: the tuple popitem() builds can
    # start a pass whose finalizer clears the map, freeing the entry's key and
    # value unless popitem holds them.
    script = textwrap.dedent(
        """
        import gc, coextra

        class K:
            pass

        m = coextra.EphemeronMap()

        class Clearer:
            def __del__(self):
                m.clear()

        gc.disable()
        k = K(); m[k] = [k, "value"]; del k
        c = Clearer(); c.cycle = c; del c
        drain = [(i, -i) for i in range(2100)]  # empties the 2-tuple free list
        gc.enable()
        key, value = m.popitem()
        assert type(key) is K and value == [key, "value"], (key, value)
        assert len(m) == 0
        print("ok")
        """
    )
    assert run_in_child(script) == "ok\n"


def test_entries_cannot_be_made_outside_a_map():
    k = Key()
    m = coextra.EphemeronMap()
    m[k] = 1
    [entry] = [r for r in weakref.getweakrefs(k) if type(r).__name__ == "_EphemeronEntry"]
    with pytest.raises(TypeError):
        type(entry)(k, None)
    del entry


# =============================================================================
# 6. Reentrancy: finalizers of values use the map while an entry goes
# =============================================================================


class Finalized:
    """A value whose __del__ runs `action` and records the outcome (an
    exception is recorded, not raised, so the test sees it)."""

    def __init__(self, action, key=None):
        self.action = action
        self.key = key

    def __del__(self):
        try:
            log.append(("ok", self.action(self)))
        except BaseException as error:  # noqa: BLE001 (the test reports it)
            log.append(("error", repr(error)))


log: list = []

REMOVALS = ["del", "pop", "overwrite", "clear", "key_death", "collect"]
ACTIONS = ["read", "write", "delete_other", "set_same_key", "nested_collect"]


@pytest.mark.usefixtures("explicit_collection_only")
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("removal", REMOVALS)
def test_a_finalizer_may_use_the_map_while_its_entry_is_removed(removal, action):
    m = coextra.EphemeronMap()
    keepers = [Key() for _ in range(30)]
    for i, keeper in enumerate(keepers):
        m[keeper] = i
    added: list = []

    def write(v):
        for _ in range(40):  # enough to grow the table
            added.append(Key())
            m[added[-1]] = "added"

    actions = {
        "read": lambda v: (problems(m), m.get(keepers[1]), len(m)),
        "write": write,
        "delete_other": lambda v: m.pop(keepers[0], None),
        "set_same_key": lambda v: m.__setitem__(v.key, "again") if v.key is not None else None,
        "nested_collect": lambda v: coextra.collect(),
    }
    log.clear()
    try:
        k = Key()
        holds_key = removal != "key_death"  # a dying key cannot be held by its value
        m[k] = Finalized(actions[action], k if holds_key else None)
        key_ref = weakref.ref(k)
        if removal == "del":
            del m[k]
        elif removal == "pop":
            m.pop(k)
        elif removal == "overwrite":
            m[k] = "new"
        elif removal == "clear":
            m.clear()
        elif removal == "key_death":
            del k
        elif removal == "collect":
            del k
            assert coextra.collect() == 1
        gc.collect()
        outcomes = list(log)
    finally:
        log.clear()
    assert len(outcomes) == 1 and outcomes[0][0] == "ok", outcomes
    result = outcomes[0][1]
    if action == "read":
        assert result[0] == [], "the map is consistent inside the finalizer"
        assert result[1] == (None if removal == "clear" else 1)
    if action == "nested_collect" and removal == "collect":
        assert result == 0, "a nested collect() returns 0 at once"
    assert problems(m) == []

    # What is in the map afterwards.
    expected = {} if removal == "clear" else {id(keeper): i for i, keeper in enumerate(keepers)}
    if action == "delete_other":
        expected.pop(id(keepers[0]), None)
    if action == "write":
        expected.update((id(a), "added") for a in added)
    key = key_ref()
    if removal == "collect":
        assert key is None, "the key died once its value let go of it"
    if key is not None:
        if action == "set_same_key":
            expected[id(key)] = "again"
        elif removal == "overwrite":
            expected[id(key)] = "new"
    assert {id(k): v for k, v in m.items()} == expected
    del key


@pytest.mark.usefixtures("explicit_collection_only")
def test_a_finalizer_that_clears_the_map_while_another_clear_runs():
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(20)]
    log.clear()
    try:
        for k in keys:
            m[k] = Finalized(lambda v: (m.clear(), m.__setitem__(keys[0], "last"), len(m))[2])
        del k
        m.clear()
        outcomes = list(log)
    finally:
        log.clear()
    assert outcomes == [("ok", 1)] * 20
    assert list(m.items()) == [(keys[0], "last")]


@pytest.mark.usefixtures("explicit_collection_only")
def test_a_finalizer_run_by_clear_finds_no_entry_that_clear_has_yet_to_release():
    """clear() empties the table before it releases a value, so a finalizer
    it runs sees an empty map, entries released after it included."""
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(10)]
    seen = []
    m[keys[0]] = Finalized(lambda v: seen.append((len(m), [k in m for k in keys], m.get(keys[-1]))))
    for k in keys[1:]:
        m[k] = Plain()
    del k
    log.clear()
    try:
        m.clear()
        outcomes = list(log)
    finally:
        log.clear()
    assert outcomes == [("ok", None)] and seen == [(0, [False] * 10, None)]
    m[keys[-1]] = "after"
    assert m[keys[-1]] == "after" and len(m) == 1


# =============================================================================
# 7. Threads
# =============================================================================


@pytest.fixture
def fast_thread_switches():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("fast_thread_switches")
def test_threads_share_a_map_while_keys_die_and_another_thread_collects():
    m = coextra.EphemeronMap()
    errors: list = []
    stop = threading.Event()

    def worker(seed):
        rng = random.Random(seed)
        mine: dict = {}  # id(key) -> (key, value): this thread's live keys
        try:
            for step in range(5000):
                op = rng.random()
                if op < 0.35 or not mine:
                    k = Key()
                    value = Plain(k) if rng.random() < 0.5 else ("v", seed, step)  # cycles too
                    m[k] = value
                    mine[id(k)] = (k, value)
                    continue
                k, value = mine[rng.choice(list(mine))]
                if op < 0.65:
                    if m.get(k) is not value or m[k] is not value or k not in m:
                        errors.append(f"thread {seed}: a live key lost its value")
                elif op < 0.8:
                    del m[k]
                    del mine[id(k)]
                    if k in m:
                        errors.append(f"thread {seed}: a deleted key is still there")
                else:
                    del mine[id(k)]  # dropped: dies now, or is a cycle for the collector
                del k, value
            for k, value in mine.values():
                if m.get(k) is not value:
                    errors.append(f"thread {seed}: a live key lost its value at the end")
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(f"thread {seed}: {error!r}")

    removed_meanwhile = []

    def collector():
        try:
            while not stop.is_set():
                removed_meanwhile.append(coextra.collect())
                keys = list(m.keys())  # (other checks would race with the workers)
                if any(k is None for k in keys) or len({id(k) for k in keys}) != len(keys):
                    errors.append("collector: a None or repeated key in keys()")
                del keys
                time.sleep(0.0005)
        except BaseException as error:  # noqa: BLE001
            errors.append(f"collector: {error!r}")

    workers = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    helper = threading.Thread(target=collector)
    helper.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    helper.join()
    assert errors == []
    assert sum(removed_meanwhile) > 0, "the collector removed dropped cycles while the workers ran"
    assert problems(m) == []
    coextra.collect()
    gc.collect()
    assert len(m) == 0, "every worker's keys are gone: dead or garbage"


# =============================================================================
# 8. fork()
# =============================================================================


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.usefixtures("explicit_collection_only")
def test_a_map_made_in_the_parent_works_in_a_forked_child():
    m = coextra.EphemeronMap()
    live = Key()
    m[live] = "live"
    garbage = Key()
    m[garbage] = [garbage]
    del garbage

    def child():
        k = Key()
        m[k] = "child"
        ok = m[live] == "live" and m.get(k) == "child" and len(m) == 3
        ok = ok and coextra.collect() == 1 and len(m) == 2
        del m[k]
        return ok and problems(m) == [] and list(m.keys()) == [live]

    assert in_child(child) == 0
    assert len(m) == 2, "the child's changes stay in the child"
    assert coextra.collect() == 1 and list(m.keys()) == [live]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork with threads (3.12+)
@pytest.mark.usefixtures("explicit_collection_only")
def test_fork_while_another_thread_is_inside_collect_removing_entries():
    inside, release = threading.Event(), threading.Event()
    m = coextra.EphemeronMap()

    class Slow:
        def __init__(self, key):
            self.key = key

        def __del__(self):
            inside.set()
            release.wait(10)  # releases the GIL with a collection running

    def make_garbage_entry(value_type):
        k = Key()
        m[k] = value_type(k)

    make_garbage_entry(Slow)
    thread = threading.Thread(target=coextra.collect)
    thread.start()
    try:
        assert inside.wait(10)

        def child():
            make_garbage_entry(Plain)
            return coextra.collect() == 1 and len(m) == 0

        status = in_child(child)
    finally:
        release.set()
        thread.join()
    assert status == 0
    assert len(m) == 0


# =============================================================================
# 9. Interpreter exit with live maps
# =============================================================================

EXIT_SCRIPT = textwrap.dedent(
    """
    import gc, sys
    import coextra

    if sys.argv[1] == "explicit":
        coextra.set_auto_collect(False)
    assert coextra.get_auto_collect() == (sys.argv[1] == "automatic")

    class Key:
        pass

    class UsesTheMap:
        # Its finalizer uses the map while the interpreter tears it down.
        def __init__(self, key, m):
            self.key, self.m, self.key_type = key, m, Key

        def __del__(self):
            self.m.get(self.key)
            len(self.m)
            self.m[self.key_type()] = "late"  # a key that dies at once

    # No GC pass while the maps fill: an automatic map scan would take the
    # entries whose keys died before they are counted.
    gc.disable()
    maps = [coextra.EphemeronMap() for _ in range(3)]
    kept = []
    for i in range(3000):
        m = maps[i % 3]
        k = Key()
        m[k] = UsesTheMap(k, m)      # values reference their own key and map
        m2 = maps[(i + 1) % 3]
        m2[k] = [k, m2]
        if i % 2:
            kept.append(k)
    maps[0][maps[1]] = maps[2]        # maps as keys and values
    maps[2][maps[2]] = maps
    cls = type("Generated", (), {})
    maps[1][cls] = cls()
    print("entries", coextra.stats()["ephemeron_entries"])
    gc.enable()
    if sys.argv[1] == "automatic":
        del k, m, m2
        gc.collect()                  # a generation-2 pass with the maps full
        print("collected", coextra.stats()["ephemeron_removed_by_collector"] > 0)
    """
)


@pytest.mark.parametrize("collection", ["explicit", "automatic"])
def test_exit_with_live_maps_is_clean(collection):
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, collection],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.split("\n")
    assert "entries 6003" in lines, proc.stdout
    if collection == "automatic":
        assert "collected True" in lines, proc.stdout


# =============================================================================
# 10. Automatic collection alone
# =============================================================================


def entries_gone_after_gc_passes(maps, passes):
    """Runs up to `passes` generation-2 GC passes; True once the maps are empty."""
    for _ in range(passes):
        gc.collect()
        if sum(len(m) for m in maps) == 0:
            return True
    return False


@pytest.mark.usefixtures("automatic_collection_on")
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_gc_collect_alone_removes_dead_shapes_with_automatic_collection(shape):
    """No call to coextra.collect(): the GC's own generation-2 passes do it
    (a second pass when the GC frees what kept the key at the first)."""
    m, m2 = coextra.EphemeronMap(), coextra.EphemeronMap()
    watched, roots, _ = build(shape, m, m2)
    del roots
    assert entries_gone_after_gc_passes([m, m2], 3)
    gc.collect()
    assert alive(watched) == []


@pytest.mark.usefixtures("automatic_collection_on")
def test_automatic_collection_keeps_live_entries():
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(10)]
    for k in keys:
        m[k] = [k]
    for _ in range(4):
        gc.collect()
    assert len(m) == 10 and all(m[k] == [k] for k in keys)


@pytest.mark.usefixtures("automatic_collection_on")
def test_automatic_collection_finds_entries_whose_keys_die_old():
    """Entries that several passes found live, whose keys then become garbage,
    are still removed by later generation-2 passes."""
    m = coextra.EphemeronMap()
    keys = [Key() for _ in range(10)]
    for k in keys:
        m[k] = Plain(k)
    del k
    for _ in range(4):
        gc.collect()
    assert len(m) == 10
    refs = [weakref.ref(k) for k in keys]
    del keys
    deadline = time.monotonic() + 5
    while len(m) and time.monotonic() < deadline:
        time.sleep(0.002)
        gc.collect()
    assert len(m) == 0
    gc.collect()
    assert alive(refs) == []
