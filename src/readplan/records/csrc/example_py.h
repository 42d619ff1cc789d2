/* The Example parse kernel's Python functions (specs/native.md, "Example parse"). */
#ifndef READPLAN_EXAMPLE_PY_H
#define READPLAN_EXAMPLE_PY_H

#include "buffers.h"

PyObject *py_example_scan(PyObject *self, PyObject *args);
PyObject *py_example_fill(PyObject *self, PyObject *args);
PyObject *py_example_bytes(PyObject *self, PyObject *args);

#define EXAMPLE_METHODS                                                                            \
    {"example_scan", py_example_scan, METH_VARARGS,                                                \
     "example_scan(records, offsets, /) -> (status, at, names, table)"},                           \
        {"example_fill", py_example_fill, METH_VARARGS,                                            \
         "example_fill(records, offsets, plan, ints, floats, starts, lengths, splits, present, /)" \
         " -> (status, at)"},                                                                      \
        {"example_bytes", py_example_bytes, METH_VARARGS,                                          \
         "example_bytes(records, offsets, starts, lengths, /) -> list of bytes of the spans"},

#endif
