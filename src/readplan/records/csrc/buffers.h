/* Borrowing buffers from Python objects, checked (specs/native.md, "Buffers"). */
#ifndef READPLAN_BUFFERS_H
#define READPLAN_BUFFERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A C-contiguous buffer of bytes: bytes, bytearray, memoryview, mmap, a numpy uint8 array. */
int borrow_bytes(PyObject *obj, Py_buffer *view, const char *name);
/* A C-contiguous buffer of native int64 values (a numpy int64 array); writable if asked. */
int borrow_int64(PyObject *obj, Py_buffer *view, int writable, const char *name);
/* A C-contiguous writable buffer of native uint32 values (a numpy uint32 array). */
int borrow_uint32(PyObject *obj, Py_buffer *view, const char *name);
/* A frame-length cap: any int >= 0 (past 2^64 - 1 it caps nothing, as the largest uint64); else
 * ValueError naming `name`, and -1. */
int max_length_of(PyObject *obj, unsigned long long *out, const char *name);
/* The number of items a borrowed buffer holds. */
static inline Py_ssize_t items_of(const Py_buffer *view) { return view->len / view->itemsize; }

/* Every span [start, start + length) of the n spans lies inside [0, size): else ValueError
 * naming the first span that does not, and -1. */
int check_spans(const int64_t *starts, const int64_t *lengths, Py_ssize_t n, Py_ssize_t size,
                const char *what);

#endif
