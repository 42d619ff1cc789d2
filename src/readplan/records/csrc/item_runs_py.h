/* A streaming reader's items, run by run from its shards' streams (specs/native.md, "run_items"). */
#ifndef READPLAN_ITEM_RUNS_PY_H
#define READPLAN_ITEM_RUNS_PY_H

#include "buffers.h"

PyObject *py_run_items(PyObject *module, PyObject *args);
/* Adds the iterator's type to the module; -1 with an error set. */
int item_runs_init(PyObject *module);

#define ITEM_RUNS_METHODS                                                                          \
    {"run_items", py_run_items, METH_VARARGS,                                                      \
     "run_items(cls, shards, files, firsts, counts, closing, starts, positions, lo, hi, epoch, "   \
     "names, /) -> RunItems"},

#endif
