/* A batch's items made one per next() (specs/native.md, "iter_items"). */
#ifndef READPLAN_ITEMS_PY_H
#define READPLAN_ITEMS_PY_H

#include "buffers.h"

PyObject *py_iter_items(PyObject *module, PyObject *args);
/* An instance of the tuple subclass cls (alloc: its tp_alloc) holding the six fields, whose
 * references it takes (a NULL field: every reference dropped, NULL returned with the error that
 * made it); NULL with an error set. */
PyObject *new_item(allocfunc alloc, PyObject *cls, PyObject *fields[6]);
/* 0 when cls is a type whose instances new_item() may fill: a class defined in Python directly on
 * tuple, with no fields of its own (readplan's Item).  A tuple subclass made in C (a structseq
 * such as os.stat_result) frees and visits fields new_item() never set: -1 and a TypeError
 * naming `who` and the class.  The last class accepted is kept, so the check costs one
 * comparison per call. */
int check_item_type(PyObject *cls, const char *who);
/* Adds the iterator's type to the module; -1 with an error set. */
int items_add_types(PyObject *module);

#define ITEMS_METHODS                                                                              \
    {"iter_items", py_iter_items, METH_VARARGS,                                                    \
     "iter_items(cls, records, names, epoch, positions, files, indices, /) -> ItemIter"},

#endif
