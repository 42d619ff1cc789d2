/* A batch's items made one per next() (specs/native.md, "iter_items"). */
#ifndef READPLAN_ITEMS_PY_H
#define READPLAN_ITEMS_PY_H

#include "buffers.h"

PyObject *py_iter_items(PyObject *module, PyObject *args);
/* Adds the iterator's type to the module; -1 with an error set. */
int items_add_types(PyObject *module);

#define ITEMS_METHODS                                                                              \
    {"iter_items", py_iter_items, METH_VARARGS,                                                    \
     "iter_items(cls, records, names, epoch, positions, files, indices, /) -> ItemIter"},

#endif
