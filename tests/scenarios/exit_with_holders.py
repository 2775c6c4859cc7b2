"""Interpreter exit with holders still attached, on run-time code and on frozen
stdlib code (posixpath.join & co. are deep-frozen on 3.11/3.12: CPython never calls
their co_extra free function, so coextra's teardown must detach them).

Products reference their own code (the shape that leaks without coextra); the
harness then checks that nothing coextra allocated is lost at exit."""

import genericpath
import posixpath

import coextra
from _scenario import check, fresh_function

# Every holder must still be attached at exit: no automatic collection.
coextra.set_auto_collect(False)

N = 2000

for target in (posixpath.join, posixpath.dirname, posixpath.split, genericpath.exists):
    coextra.attach(target, ("compiled", target, target.__code__))

kept = []
for i in range(N):
    f = fresh_function(i)
    coextra.attach(f, (f, f.__code__, bytearray(64)))  # cycle code -> holder -> product -> code
    coextra.attach(f, [f.__code__])
    if i % 2:
        kept.append(f)  # half stay reachable until exit, half are only in their own cache

check(coextra.stats()["holders"] == N + 4, f"expected {N + 4} holders, got {coextra.stats()}")
print("attached", coextra.stats()["holders"], "holders; exiting with them attached")
