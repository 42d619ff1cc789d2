/* The frame kernels' Python functions that pack frames or read them from a file
 * (specs/native.md §3). */
#ifndef READPLAN_FRAMES_PY_H
#define READPLAN_FRAMES_PY_H

#include "buffers.h"

PyObject *py_scan_pack(PyObject *self, PyObject *args);
PyObject *py_read_large_frames(PyObject *self, PyObject *args);

#define FRAMES_METHODS                                                                             \
    {"scan_pack", py_scan_pack, METH_VARARGS,                                                      \
     "scan_pack(data, off, limit, max_length, verify, offsets, k, /) -> (values, count, end, "     \
     "stop)"},                                                                                     \
        {"read_large_frames", py_read_large_frames, METH_VARARGS,                                  \
         "read_large_frames(fd, head, pos, end, max_length, verify, limit, budget, least, /) -> "  \
         "(records, pos, tail)"},

#endif
