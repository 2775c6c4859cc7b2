"""reset() while holders, entries and products are still referenced elsewhere:
the detached holders must stay usable, and everything must be freed once those
outside references go (some only at interpreter exit)."""

import gc

import coextra
from _scenario import alive, check, fresh_function

N = 1000

functions = [fresh_function(i) for i in range(N)]
holders, entries, products = [], [], []
for f in functions:
    product = {"code": f.__code__, "function": f, "payload": bytearray(32)}
    entries.append(coextra.attach(f, product))
    holders.append(coextra.holder(f))
    products.append(product)

check(coextra.reset() == N, "reset() detaches every holder")
check(coextra.stats()["holders"] == 0, "no holder attached after reset()")
check(all(h.code is None for h in holders), "detached holders forget their code")
check(all(e.product is p for e, p in zip(entries, products)), "entries keep their products")
check(coextra.holder(functions[0]) is None, "reset() cleared the co_extra slot")

# Reattach a fresh holder to a code whose old holder is still referenced.
coextra.attach(functions[0], "again")
check(coextra.holder(functions[0]) is not holders[0], "a new holder after reset()")

del entries, products
gc.collect()
holders_alive, _ = alive()
check(holders_alive == N + 1, f"the referenced detached holders stay alive ({holders_alive})")

# Drop half of the outside references now; the other half go at interpreter exit.
del holders[: N // 2], functions[: N // 2]
gc.collect()
print("reset", N, "holders; half of them are still referenced at exit")
