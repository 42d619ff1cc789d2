/* The reader's kernels over runs and spans (specs/native.md, "take_runs", "cut_frames_into"). */
#ifndef READPLAN_RUNS_PY_H
#define READPLAN_RUNS_PY_H

#include "buffers.h"

PyObject *py_take_runs(PyObject *self, PyObject *args);
/* The TypeError of a kernel (`who`) given shards that are not exactly a dict: NULL. */
PyObject *shards_not_a_dict(const char *who, PyObject *shards);
/* The `stream` of shards[file], a new reference; NULL when there is none (no shard, or its stream
 * is None: no error set) or with the error of its lookup set. */
PyObject *stream_of(PyObject *shards, PyObject *file);
/* The error set, taken as its exception object (with its traceback), a new reference; the error
 * indicator is cleared.  A stream's error becomes a run's outcome so. */
PyObject *fetched_error(void);
PyObject *py_cut_frames_into(PyObject *self, PyObject *args);
PyObject *py_span_bounds(PyObject *self, PyObject *args);

#define RUNS_METHODS                                                                               \
    {"take_runs", py_take_runs, METH_VARARGS,                                                      \
     "take_runs(out, shards, files, counts, closing, lo, hi, /) -> (k, got, outcome)"},        \
        {"cut_frames_into", py_cut_frames_into, METH_VARARGS,                                      \
         "cut_frames_into(out, places, data, begins, ends, headers, max_length, /) -> bool"},   \
        {"span_bounds", py_span_bounds, METH_VARARGS,                                              \
         "span_bounds(bounds, indices, max_gap, max_skip, begins, ends, gaps, /) -> count"},

#endif
