// module_dicts.cpp -- listing the module dicts a pass prunes (module_dicts.h).
#include "module_dicts.h"

#include <new>

namespace coextra::detail {

bool ModuleDicts::refresh(bool force) {
    PyObject *modules = PyImport_GetModuleDict();  // borrowed, owned by the interpreter
    if (modules == nullptr || !PyDict_Check(modules)) {
        sorted.clear();
        forget_recent();
        return true;
    }
    if (!force && PyDict_GET_SIZE(modules) == modules_seen) {
        return true;
    }
    sorted.clear();
    modules_seen = -1;
    forget_recent();
    try {
        Py_ssize_t pos = 0;
        PyObject *key, *module;
        while (PyDict_Next(modules, &pos, &key, &module)) {
            if (PyModule_Check(module)) {
                sorted.push_back(PyModule_GetDict(module));  // borrowed, never NULL
            }
        }
        std::sort(sorted.begin(), sorted.end());
    } catch (const std::bad_alloc &) {
        sorted.clear();
        return false;
    }
    modules_seen = PyDict_GET_SIZE(modules);
    return true;
}

}  // namespace coextra::detail
