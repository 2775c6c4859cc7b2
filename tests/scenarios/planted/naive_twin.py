"""PLANTED LEAK (run only when explicitly selected): the naive strong co_extra store
(coextra.stress._naive) with products that reference their own code. Every code object
stays alive forever in a cycle the GC cannot see; the harness must report it.

The product is a tuple of the code and a buffer: once the GC has untracked it (a
tuple of untracked objects is untracked at the next collection), nothing outside
the cycle points to the code or the tuple, so valgrind and LeakSanitizer report them
as definitely lost. (A product holding a GC-tracked object such as the function
stays linked in the GC's lists: still reachable for valgrind and LSan, caught by
the refleak harness instead.)"""

import gc

from _scenario import fresh_function

from coextra.stress import _naive

for i in range(200):
    f = fresh_function(i)
    _naive.put(f.__code__, (f.__code__, bytearray(b"naive twin product %d" % i)))
del f
gc.collect()
print("naive store: 200 code objects leaked on purpose")
