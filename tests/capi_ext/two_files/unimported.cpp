// The C++ file of _capi_two_files: the wrapper in a file that never calls
// coextra_import() (init.c says why).
#include <coextra/coextra.hpp>

extern "C" PyObject *unimported_cpp_ensure(PyObject *, PyObject *code) {
    coextra::Holder holder = coextra::Holder::ensure(code);
    return holder ? PyBool_FromLong(1) : nullptr;
}
