/* The frame kernels' Python functions that pack frames or read them from a file
 * (specs/native.md §3). */
#ifndef READPLAN_FRAMES_PY_H
#define READPLAN_FRAMES_PY_H

#include "buffers.h"

PyObject *py_scan_pack(PyObject *self, PyObject *args);
PyObject *py_read_frame_data(PyObject *self, PyObject *args);

#define FRAMES_METHODS                                                                             \
    {"scan_pack", py_scan_pack, METH_VARARGS,                                                      \
     "scan_pack(data, off, limit, max_length, verify, offsets, k, /) -> (values, count, end, "     \
     "stop)"},                                                                                     \
        {"read_frame_data", py_read_frame_data, METH_VARARGS,                                      \
         "read_frame_data(fd, offset, length, tail, verify, /) -> (data, tail, crc) or None"},

#endif
