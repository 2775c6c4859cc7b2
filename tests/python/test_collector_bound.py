"""Automatic collection alone keeps dead caches bounded.

The guarantee (README, "Automatic collection"): after every generation-2
collection, the attached holders whose code is garbage number at most
max(2,000, 10% of the live holders), for a program that drops generated
code in waves, without ever calling coextra.collect(). Each workload below
checks it after every wave's gc.collect(); the control shows the same
measurement failing with automatic collection off."""

from __future__ import annotations

import gc
import types
import weakref

import pytest
from hypothesis import HealthCheck, given, settings

import coextra
import product_shapes


FLOOR = 2_000
FRACTION = 0.10


def template(x):
    return x + 1


def live_caches(n: int) -> list:
    """n live functions with distinct code objects, each with a cache that
    references its function (cheap: CodeType.replace, no compile)."""
    code = template.__code__
    functions = [
        types.FunctionType(code.replace(co_name=f"live{i}", co_firstlineno=i + 1), {})
        for i in range(n)
    ]
    for f in functions:
        coextra.attach(f, [f])
    return functions


def wave_functions(wave: int, count: int) -> list:
    """`count` functions compiled at run time into one fresh module namespace
    (each function references the namespace, which references them all)."""
    source = "".join(f"def w{wave}_{i}(x):\n    return x + {i}\n" for i in range(count))
    namespace: dict = {}
    exec(compile(source, f"<wave {wave}>", "exec"), namespace)
    return [namespace[f"w{wave}_{i}"] for i in range(count)]


def dead_attached(refs) -> int:
    """Attached holders among dropped code objects: a dropped wave's code is
    kept alive by nothing but its cache, so alive means attached and dead."""
    return sum(1 for r in refs if r() is not None)


def bound(live: int) -> int:
    return max(FLOOR, int(FRACTION * live))


def run_waves(live: int, waves: int, per_wave: int, attach, keep_fraction: float = 0.0):
    """Runs the waves and returns the worst dead count seen after a
    gc.collect(), with the bound for the live holders at that moment."""
    coextra.reset()
    gc.collect()
    kept_live = live_caches(live)
    kept_from_waves: list = []
    dropped: list = []
    worst = (0, bound(live))
    for wave in range(waves):
        functions = wave_functions(wave, per_wave)
        for f in functions:
            attach(f)
        keep = int(len(functions) * keep_fraction)
        kept_from_waves.extend(functions[:keep])
        for f in functions[keep:]:
            del f.__globals__[f.__name__]  # the kept ones' namespace must not keep it
            dropped.append(weakref.ref(f.__code__))
        del functions, f
        gc.collect()
        dead = dead_attached(dropped)
        live_now = len(coextra.holders()) - dead
        if dead - bound(live_now) > worst[0] - worst[1]:
            worst = (dead, bound(live_now))
    result = worst, len(kept_live) + len(kept_from_waves)
    # Everything dropped is found by an explicit pass: the measurement sees real caches.
    coextra.collect()
    gc.collect()
    assert dead_attached(dropped) == 0
    coextra.reset()
    return result


def attach_referencing_function(f):
    coextra.attach(f, ("product", f))


@pytest.mark.parametrize("live", [0, 10, 1_000, 50_000])
def test_waves_stay_bounded_with_automatic_collection_alone(live):
    (dead, limit), _ = run_waves(live, waves=30, per_wave=1_500, attach=attach_referencing_function)
    assert dead <= limit, f"{dead} dead caches attached, bound {limit}"


def test_without_automatic_collection_the_same_waves_exceed_the_bound():
    """The control: the bound above is the policy's doing."""
    coextra.set_auto_collect(False)
    try:
        (dead, limit), _ = run_waves(10, waves=4, per_wave=1_500, attach=attach_referencing_function)
    finally:
        coextra.set_auto_collect(True)
    assert dead > limit


def test_waves_through_evalframe_stay_bounded():
    def compile_step(code):
        return ("compiled", code)

    def call_through_backend(f):
        coextra.evalframe.enable(compile_step)
        try:
            f(1)
        finally:
            coextra.evalframe.disable()

    (dead, limit), _ = run_waves(10, waves=20, per_wave=1_500, attach=call_through_backend)
    assert dead <= limit


def test_waves_whose_products_share_one_large_structure_stay_bounded():
    shared = {"table": list(range(100_000)), "objects": [[i] for i in range(20_000)]}

    def attach_sharing(f):
        coextra.attach(f, (f, shared))

    (dead, limit), _ = run_waves(10, waves=20, per_wave=1_500, attach=attach_sharing)
    assert dead <= limit


def test_a_workload_keeping_most_of_what_it_creates_stays_bounded():
    (dead, limit), kept = run_waves(
        100, waves=30, per_wave=1_500, attach=attach_referencing_function, keep_fraction=0.9
    )
    assert kept > 40_000 and dead <= limit


def test_code_dropped_in_a_quiet_spell_below_newer_live_code_goes_in_the_next_collection(
        automatic_collection_on):
    """A program whose caches have died before, then went quiet (generation
    passes found nothing dead for a while), drops waves and compiles more
    code that it keeps, with the GC disabled meanwhile: the dropped caches
    lie below many live ones, and no automatic pass has seen one die since. The next gc.collect() still
    leaves no more than the bound attached."""
    coextra.reset()
    gc.collect()
    for f in wave_functions(0, 1_500):  # caches die in this program
        attach_referencing_function(f)
    del f
    gc.collect()
    assert len(coextra.holders()) == 0
    kept = live_caches(1_000)
    for _ in range(3):  # quiet: every generation pass finds everything live
        gc.collect()
    dropped = []
    gc.disable()  # no GC pass, so no automatic pass sees them die before gc.collect()
    try:
        for wave in range(1, 4):
            functions = wave_functions(wave, 1_500)
            for f in functions:
                attach_referencing_function(f)
            dropped.extend(weakref.ref(f.__code__) for f in functions)
            del functions, f
        kept += live_caches(30_000)  # newer than the dropped waves, and live
    finally:
        gc.enable()
    gc.collect()
    dead = dead_attached(dropped)
    assert dead <= bound(len(kept)), f"{dead} dead caches attached, bound {bound(len(kept))}"
    coextra.reset()


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shape=product_shapes.product_shapes())
def test_waves_of_every_product_shape_stay_bounded(automatic_collection_on, shape):
    """Whatever path leads from product to code (product_shapes.py), a wave
    dropped above the bound's floor is within the bound after its gc.collect()."""
    per_wave = FLOOR + 500
    coextra.reset()
    gc.collect()
    for wave in range(2):
        functions = [product_shapes.build(shape, wave * per_wave + i) for i in range(per_wave)]
        del functions
        gc.collect()
        dead = len(coextra.holders())
        assert dead <= bound(0), f"{shape}: {dead} dead caches attached after wave {wave}"
    coextra.reset()


def test_stats_show_the_policy_working():
    coextra.reset()
    before = coextra.stats()
    keep = live_caches(10)
    for wave in range(3):
        for f in wave_functions(wave, 1_500):
            attach_referencing_function(f)
        del f
        gc.collect()
    after = coextra.stats()
    assert after["auto_detached"] - before["auto_detached"] >= 3_000
    assert after["auto_generation_passes"] > before["auto_generation_passes"]
    assert (after["auto_generation_slices"] - before["auto_generation_slices"]
            >= after["auto_generation_passes"] - before["auto_generation_passes"])
    assert after["auto_last_generation_detached"] >= 1
    assert 0 < after["auto_max_pause"] <= after["auto_seconds"]
    assert len(coextra.holders()) == len(keep)
