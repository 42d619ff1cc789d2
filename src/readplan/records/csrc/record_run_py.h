/* record_run(): the records of a read buffer handed out one at a time (specs/native.md §3). */
#ifndef READPLAN_RECORD_RUN_PY_H
#define READPLAN_RECORD_RUN_PY_H

#include "buffers.h"

/* Makes the iterator type; -1 with an exception set on failure.  Called once, at module init. */
int record_run_init(PyObject *module);
PyObject *py_record_run(PyObject *self, PyObject *args);

#define RECORD_RUN_METHODS                                                                         \
    {"record_run", py_record_run, METH_VARARGS,                                                    \
     "record_run(data, off, limit, max_length, verify, /) -> iterator of the records from off"},

#endif
