/* take_runs: the reader's runs of one batch taken from its shards' streams without a Python step
 * per run (specs/native.md, "take_runs"; the twin is readplan.reading.run_streams.take_runs_pure).
 *
 * Run k takes counts[k] records from the stream of shard files[k] (the shard's `stream` attribute)
 * and appends them to `out`.  It stops at the first run it cannot take whole: a run marked in
 * `closing` (the plan's last read of its file, whose end the caller checks), a file without an
 * open shard or stream, a stream that ends early or raises.  The GIL is held: every step makes or
 * moves Python objects. */
#include "runs_py.h"

#include <string.h>

#include "spans.h"

/* How a call stopped at run k (the Python contract, reading/run_streams.py). */
#define RUN_NOT_TAKEN 0 /* run k must be taken by the caller (nothing of it appended) */
#define RUN_ENDED 1     /* run k's stream ended after `got` of its records */

static PyObject *stream_name;

PyObject *fetched_error(void) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL)
        PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}

PyObject *stream_of(PyObject *shards, PyObject *file) {
    if (stream_name == NULL && (stream_name = PyUnicode_InternFromString("stream")) == NULL)
        return NULL;
    PyObject *shard = PyDict_GetItemWithError(shards, file); /* borrowed */
    if (shard == NULL)
        return NULL;
    /* Held while its attribute runs Python, which may drop the dict's reference. */
    Py_INCREF(shard);
    PyObject *stream = PyObject_GetAttr(shard, stream_name);
    Py_DECREF(shard);
    if (stream == Py_None) {
        Py_DECREF(stream);
        return NULL;
    }
    return stream;
}

static PyObject *stopped(Py_ssize_t k, Py_ssize_t got, PyObject *outcome) {
    /* "N" steals the outcome's reference. */
    return Py_BuildValue("(nnN)", k, got, outcome);
}

PyObject *py_take_runs(PyObject *self, PyObject *args) {
    PyObject *out, *shards, *files, *counts, *closing;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!nn:take_runs", &PyList_Type, &out, &PyDict_Type, &shards,
                          &PyList_Type, &files, &PyList_Type, &counts, &PyList_Type, &closing, &lo,
                          &hi))
        return NULL;
    Py_ssize_t n = PyList_Size(files);
    if (PyList_Size(counts) != n || PyList_Size(closing) != n)
        return PyErr_Format(PyExc_ValueError,
                            "take_runs: files, counts and closing must hold one entry per run");
    if (lo < 0 || lo > hi || hi > n)
        return PyErr_Format(PyExc_ValueError, "take_runs: runs %zd .. %zd are not within 0 .. %zd",
                            lo, hi, n);
    for (Py_ssize_t k = lo; k < hi; k++) {
        /* The lists are the caller's and the streams run Python, which may change them: each
         * entry is fetched (an IndexError when a list shrank) and held while it is used. */
        PyObject *closing_k = PyList_GetItem(closing, k);
        PyObject *count_k = PyList_GetItem(counts, k);
        PyObject *file = PyList_GetItem(files, k);
        if (closing_k == NULL || count_k == NULL || file == NULL)
            return NULL;
        Py_ssize_t count = PyLong_AsSsize_t(count_k);
        if (count == -1 && PyErr_Occurred())
            return NULL;
        if (count < 0)
            return PyErr_Format(PyExc_ValueError, "take_runs: run %zd counts %zd records", k,
                                count);
        Py_INCREF(closing_k);
        int last = PyObject_IsTrue(closing_k);
        Py_DECREF(closing_k);
        if (last < 0)
            return NULL;
        if (last)
            return stopped(k, 0, PyLong_FromLong(RUN_NOT_TAKEN));
        Py_INCREF(file);
        PyObject *stream = stream_of(shards, file);
        Py_DECREF(file);
        if (stream == NULL) {
            if (PyErr_Occurred())
                return NULL;
            return stopped(k, 0, PyLong_FromLong(RUN_NOT_TAKEN));
        }
        iternextfunc next = (iternextfunc)PyType_GetSlot(Py_TYPE(stream), Py_tp_iternext);
        if (next == NULL) {
            Py_DECREF(stream);
            return PyErr_Format(PyExc_TypeError, "take_runs: the stream of run %zd is not an "
                                "iterator", k);
        }
        for (Py_ssize_t got = 0; got < count; got++) {
            PyObject *record = next(stream);
            if (record == NULL) {
                Py_DECREF(stream);
                if (!PyErr_Occurred())
                    return stopped(k, got, PyLong_FromLong(RUN_ENDED));
                if (PyErr_ExceptionMatches(PyExc_StopIteration)) {
                    PyErr_Clear();
                    return stopped(k, got, PyLong_FromLong(RUN_ENDED));
                }
                if (!PyErr_ExceptionMatches(PyExc_Exception))
                    return NULL; /* KeyboardInterrupt, SystemExit: not the run's outcome */
                return stopped(k, got, fetched_error());
            }
            int appended = PyList_Append(out, record);
            Py_DECREF(record);
            if (appended < 0) {
                Py_DECREF(stream);
                return NULL;
            }
        }
        Py_DECREF(stream);
    }
    return stopped(hi, 0, PyLong_FromLong(RUN_NOT_TAKEN));
}

/* place(values, order): the list out with out[order[j]] = values[j], where order holds each of
 * 0 .. n - 1 once (n = len(values)); else ValueError naming the first entry that does not. */
PyObject *py_place(PyObject *self, PyObject *args) {
    PyObject *values, *order_obj;
    if (!PyArg_ParseTuple(args, "O!O:place", &PyList_Type, &values, &order_obj))
        return NULL;
    Py_buffer order;
    if (borrow_int64(order_obj, &order, 0, "place: order") < 0)
        return NULL;
    Py_ssize_t n = PyList_Size(values);
    PyObject *out = NULL;
    if (items_of(&order) != n) {
        PyErr_Format(PyExc_ValueError, "place: %zd values but %zd places", n, items_of(&order));
    } else if ((out = PyList_New(n)) != NULL) {
        /* The GIL is held throughout: the order array cannot change under the loop. */
        const int64_t *at = order.buf;
        for (Py_ssize_t j = 0; j < n; j++) {
            int64_t k = at[j];
            if (k < 0 || k >= n || PyList_GetItem(out, (Py_ssize_t)k) != NULL) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError,
                             "place: order[%zd] = %lld is not a free place in 0 .. %zd", j,
                             (long long)k, n - 1);
                Py_CLEAR(out);
                break;
            }
            PyObject *value = PyList_GetItem(values, j);
            Py_INCREF(value);
            PyList_SetItem(out, (Py_ssize_t)k, value);
        }
    }
    PyBuffer_Release(&order);
    return out;
}

/* Bytes objects of the payloads of the n frames [b[i], e[i]) of data[0:size] and, in outs[],
 * where their bytes are: those shorter than COPY_CHECKED copied now, the others to be copied by
 * check_frames(); a list with None in place of each frame that does not lie in the data with a
 * payload of at most max_length (check_frames() then refuses it before any copy). */
static PyObject *payload_buffers(const char *data, const int64_t *b, const int64_t *e,
                                 Py_ssize_t n, size_t size, uint64_t max_length,
                                 unsigned char **outs) {
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        int fits = b[i] >= 0 && e[i] >= b[i] && (uint64_t)e[i] <= size && e[i] - b[i] >= 16 &&
                   (uint64_t)(e[i] - b[i] - 16) <= max_length;
        Py_ssize_t length = fits ? e[i] - b[i] - 16 : 0;
        PyObject *piece =
            !fits ? Py_NewRef(Py_None)
                  : PyBytes_FromStringAndSize(length < COPY_CHECKED ? data + b[i] + 12 : NULL,
                                              length);
        if (piece == NULL) {
            Py_CLEAR(out);
            break;
        }
        outs[i] = fits ? (unsigned char *)PyBytes_AsString(piece) : NULL;
        PyList_SetItem(out, i, piece);
    }
    return out;
}

/* cut_frames(data, begins, ends, headers, max_length): the payloads of the frames
 * [begins[i], ends[i]) of data as bytes, once check_frames() finds every one sound; None when
 * one is damaged; ValueError for a span outside the data.  The bytes objects are made first (short
 * payloads copied into them at once) and checked by check_frames() with the GIL released, each
 * CRC computed over the copy (a long payload's while it is copied): what is delivered is what was
 * checked. */
PyObject *py_cut_frames(PyObject *self, PyObject *args) {
    PyObject *data_obj, *begins_obj, *ends_obj;
    int headers;
    unsigned long long max_length;
    if (!PyArg_ParseTuple(args, "OOOpK:cut_frames", &data_obj, &begins_obj, &ends_obj, &headers,
                          &max_length))
        return NULL;
    Py_buffer data, begins, ends;
    if (borrow_bytes(data_obj, &data, "cut_frames: data") < 0)
        return NULL;
    if (borrow_int64(begins_obj, &begins, 0, "cut_frames: begins") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (borrow_int64(ends_obj, &ends, 0, "cut_frames: ends") < 0) {
        PyBuffer_Release(&begins);
        PyBuffer_Release(&data);
        return NULL;
    }
    Py_ssize_t n = items_of(&begins);
    PyObject *out = NULL;
    int64_t *b = NULL;
    if (items_of(&ends) != n) {
        PyErr_Format(PyExc_ValueError, "cut_frames: %zd begins but %zd ends", n, items_of(&ends));
    } else if ((b = PyMem_Malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *b +
                                 (size_t)(n > 0 ? n : 1) * sizeof(unsigned char *))) == NULL) {
        PyErr_NoMemory();
    } else {
        /* The spans are checked and cut in a copy: another thread may write the caller's arrays
         * while the GIL is released, and a span checked must be the span cut. */
        int64_t *e = b + n;
        unsigned char **outs = (unsigned char **)(e + (n > 0 ? n : 1));
        memcpy(b, begins.buf, (size_t)n * sizeof *b);
        memcpy(e, ends.buf, (size_t)n * sizeof *e);
        out = payload_buffers(data.buf, b, e, n, (size_t)data.len, (uint64_t)max_length, outs);
        size_t bad = 0;
        int found = FRAMES_SOUND;
        if (out != NULL) {
            Py_BEGIN_ALLOW_THREADS
            found = check_frames(data.buf, (size_t)data.len, b, e, (size_t)n, headers,
                                 (uint64_t)max_length, outs, &bad);
            Py_END_ALLOW_THREADS
        }
        if (found == FRAMES_OUTSIDE) {
            Py_CLEAR(out);
            PyErr_Format(PyExc_ValueError,
                         "cut_frames: frame %zd spans bytes [%lld, %lld) outside a buffer of %zd "
                         "bytes", (Py_ssize_t)bad, (long long)b[bad], (long long)e[bad], data.len);
        } else if (found == FRAMES_DAMAGED) {
            Py_DECREF(out);
            out = Py_NewRef(Py_None);
        }
    }
    PyMem_Free(b);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&begins);
    PyBuffer_Release(&data);
    return out;
}
