"""The evalframe backend still enabled when the interpreter exits, with products
that reference their code cached for many frames."""

import coextra.evalframe as evalframe
from _scenario import check, fresh_function

compiled = []


def compile_code(code):
    product = ("compiled", code, bytearray(32))
    compiled.append(code.co_name)
    return product


evalframe.enable(compile_code)
functions = [fresh_function(i) for i in range(500)]
total = sum(f(1) for f in functions) + sum(f(2) for f in functions)
check(total == sum(range(500)) * 2 + 500 * 3, "program behaviour is unchanged under the backend")
check(evalframe.stats()["hits"] >= 500, f"second calls are hits: {evalframe.stats()}")
del functions
print("exiting with the evalframe backend enabled;", len(compiled), "codes compiled")
