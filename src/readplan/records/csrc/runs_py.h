/* The reader's kernels over runs and spans (specs/native.md, "take_runs", "cut_frames_into"). */
#ifndef READPLAN_RUNS_PY_H
#define READPLAN_RUNS_PY_H

#include "buffers.h"

PyObject *py_take_runs(PyObject *self, PyObject *args);
PyObject *py_cut_frames_into(PyObject *self, PyObject *args);

#define RUNS_METHODS                                                                               \
    {"take_runs", py_take_runs, METH_VARARGS,                                                      \
     "take_runs(out, shards, files, counts, closing, lo, hi, /) -> (k, got, outcome)"},        \
        {"cut_frames_into", py_cut_frames_into, METH_VARARGS,                                      \
         "cut_frames_into(out, places, data, begins, ends, headers, max_length, /) -> bool"},

#endif
