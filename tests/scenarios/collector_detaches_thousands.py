"""The cycle collector detaching thousands of holders whose code is reachable only
through its own cache; then exit."""

import gc
import weakref

import coextra
from _scenario import check, fresh_function

# The explicit collect() below must find all of them: no automatic collection.
coextra.set_auto_collect(False)

N = 3000
refs = []
for i in range(N):
    ns: dict = {}
    f = fresh_function(i, ns)
    coextra.attach(f, (f, ns, f.__code__, bytearray(32)))
    refs.append(weakref.ref(f.__code__))
del f, ns

gc.collect()
detached = coextra.collect()
gc.collect()
check(detached >= N, f"collect() detached {detached} of {N} holders")
check(all(r() is None for r in refs), "every code object was freed")
print("collector detached", detached, "holders")
