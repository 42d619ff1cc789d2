#include "buffers.h"

#include <limits.h>
#include <string.h>

int borrow_bytes(PyObject *obj, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous bytes-like object, got %S", name,
                     (PyObject *)Py_TYPE(obj));
        return -1;
    }
    return 0;
}

/* numpy describes int64 as "l" or "q" (by the platform's C type), with or without a byte-order
 * prefix for the native order. */
static int is_format(const char *format, const char *accepted, Py_ssize_t itemsize,
                     Py_ssize_t expected) {
    if (format == NULL || itemsize != expected)
        return 0;
    if (format[0] == '@' || format[0] == '=' || format[0] == '<')
        format++;
    return format[0] != '\0' && format[1] == '\0' && strchr(accepted, format[0]) != NULL;
}

static int borrow_typed(PyObject *obj, Py_buffer *view, int writable, const char *name,
                        const char *accepted, Py_ssize_t itemsize, const char *type) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous%s %s array, got %S", name,
                     writable ? " writable" : "", type, (PyObject *)Py_TYPE(obj));
        return -1;
    }
    if (!is_format(view->format, accepted, view->itemsize, itemsize)) {
        PyErr_Format(PyExc_TypeError, "%s must be a %s array, got items of format '%s'", name, type,
                     view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

int borrow_int64(PyObject *obj, Py_buffer *view, int writable, const char *name) {
    return borrow_typed(obj, view, writable, name, sizeof(long) == 8 ? "lq" : "q", 8, "int64");
}

int borrow_uint32(PyObject *obj, Py_buffer *view, const char *name) {
    return borrow_typed(obj, view, 1, name, sizeof(int) == 4 ? "I" : "L", 4, "uint32");
}

int check_spans(const int64_t *starts, const int64_t *lengths, Py_ssize_t n, Py_ssize_t size,
                const char *what) {
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = starts[i], l = lengths[i];
        if (s < 0 || l < 0 || s > (int64_t)size || l > (int64_t)size - s) {
            PyErr_Format(PyExc_ValueError,
                         "%s %zd spans bytes [%lld, %lld + %lld) outside a buffer of %zd bytes", what,
                         i, (long long)s, (long long)s, (long long)l, size);
            return -1;
        }
    }
    return 0;
}

/* A frame-length cap: any int >= 0 (past 2^64 - 1 it caps nothing, as the largest uint64). */
int max_length_of(PyObject *obj, unsigned long long *out, const char *name) {
    PyObject *value = PyNumber_Index(obj);
    if (value == NULL)
        return -1;
    int overflow, bad = 0;
    long long small = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (small == -1 && PyErr_Occurred()) {
        bad = 1;
    } else if (overflow < 0 || (overflow == 0 && small < 0)) {
        PyErr_Format(PyExc_ValueError, "%s: max_length must be >= 0, got %S", name, value);
        bad = 1;
    } else if (overflow == 0) {
        *out = (unsigned long long)small;
    } else {
        *out = PyLong_AsUnsignedLongLong(value);
        if (*out == ULLONG_MAX && PyErr_Occurred()) {
            PyErr_Clear(); /* over 2^64 - 1 */
            *out = ULLONG_MAX;
        }
    }
    Py_DECREF(value);
    return bad ? -1 : 0;
}
