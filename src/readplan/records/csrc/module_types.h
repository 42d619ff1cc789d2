/* The core's iterator types, made from their specs and added to the module. */
#ifndef READPLAN_MODULE_TYPES_H
#define READPLAN_MODULE_TYPES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Makes the type of `spec` into *type and adds it to the module as `name`; -1 with an error set.
 * The module keeps its own reference; *type keeps the one made here, for the kernels. */
static inline int add_type(PyObject *module, PyType_Spec *spec, const char *name,
                           PyTypeObject **type) {
    *type = (PyTypeObject *)PyType_FromSpec(spec);
    if (*type == NULL)
        return -1;
    Py_INCREF((PyObject *)*type);
    if (PyModule_AddObject(module, name, (PyObject *)*type) < 0) {
        Py_DECREF((PyObject *)*type);
        return -1;
    }
    return 0;
}

#endif
