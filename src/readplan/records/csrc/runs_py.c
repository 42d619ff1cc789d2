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

PyObject *shards_not_a_dict(const char *who, PyObject *shards) {
    return PyErr_Format(PyExc_TypeError,
                        "%s: shards must be a dict (the shards are looked up in it as a dict, "
                        "not through a subclass's methods), got %R",
                        who, (PyObject *)Py_TYPE(shards));
}

PyObject *py_take_runs(PyObject *self, PyObject *args) {
    PyObject *out, *shards, *files, *counts, *closing;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "O!OO!O!O!nn:take_runs", &PyList_Type, &out, &shards,
                          &PyList_Type, &files, &PyList_Type, &counts, &PyList_Type, &closing, &lo,
                          &hi))
        return NULL;
    if (!PyDict_CheckExact(shards))
        return shards_not_a_dict("take_runs", shards);
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
        if (closing_k == NULL || count_k == NULL)
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
        /* Fetched after the test, which may have run Python that changed the list (as the
         * twin reads it), and held while its lookup runs Python again. */
        PyObject *file = PyList_GetItem(files, k);
        if (file == NULL)
            return NULL;
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

/* The payloads of the frames [begins[i], ends[i]) of data as a list of bytes, once check_frames()
 * finds every one sound (CUT_SOUND); CUT_DAMAGED (*cut NULL) when one is damaged; CUT_ERROR with a
 * ValueError for a span outside the data or columns of different lengths.  The bytes objects are
 * made first (short payloads copied into them at once) and checked by check_frames() with the GIL
 * released, each CRC computed over the copy (a long payload's while it is copied): what is
 * delivered is what was checked. */
#define CUT_ERROR (-1)
#define CUT_DAMAGED 0
#define CUT_SOUND 1
static int cut_checked(const Py_buffer *data, const Py_buffer *begins, const Py_buffer *ends,
                       int headers, unsigned long long max_length, PyObject **cut) {
    *cut = NULL;
    Py_ssize_t n = items_of(begins);
    if (items_of(ends) != n) {
        PyErr_Format(PyExc_ValueError, "cut_frames: %zd begins but %zd ends", n, items_of(ends));
        return CUT_ERROR;
    }
    int64_t *b = PyMem_Malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *b +
                              (size_t)(n > 0 ? n : 1) * sizeof(unsigned char *));
    if (b == NULL) {
        PyErr_NoMemory();
        return CUT_ERROR;
    }
    /* The spans are checked and cut in a copy: another thread may write the caller's arrays
     * while the GIL is released, and a span checked must be the span cut. */
    int64_t *e = b + n;
    unsigned char **outs = (unsigned char **)(e + (n > 0 ? n : 1));
    memcpy(b, begins->buf, (size_t)n * sizeof *b);
    memcpy(e, ends->buf, (size_t)n * sizeof *e);
    PyObject *out = payload_buffers(data->buf, b, e, n, (size_t)data->len, (uint64_t)max_length,
                                    outs);
    int status = CUT_ERROR;
    if (out != NULL) {
        size_t bad = 0;
        int found;
        Py_BEGIN_ALLOW_THREADS
        found = check_frames(data->buf, (size_t)data->len, b, e, (size_t)n, headers,
                             (uint64_t)max_length, outs, &bad);
        Py_END_ALLOW_THREADS
        if (found == FRAMES_OUTSIDE) {
            Py_CLEAR(out);
            PyErr_Format(PyExc_ValueError,
                         "cut_frames: frame %zd spans bytes [%lld, %lld) outside a buffer of %zd "
                         "bytes", (Py_ssize_t)bad, (long long)b[bad], (long long)e[bad], data->len);
        } else if (found == FRAMES_DAMAGED) {
            Py_CLEAR(out);
            status = CUT_DAMAGED;
        } else {
            status = CUT_SOUND;
        }
    }
    PyMem_Free(b);
    *cut = out;
    return status;
}

/* The three buffers of a cut: data, begins, ends; -1 (nothing held) with an error set. */
static int borrow_frames(PyObject *data_obj, PyObject *begins_obj, PyObject *ends_obj,
                         Py_buffer *data, Py_buffer *begins, Py_buffer *ends) {
    if (borrow_bytes(data_obj, data, "cut_frames: data") < 0)
        return -1;
    if (borrow_int64(begins_obj, begins, 0, "cut_frames: begins") < 0) {
        PyBuffer_Release(data);
        return -1;
    }
    if (borrow_int64(ends_obj, ends, 0, "cut_frames: ends") < 0) {
        PyBuffer_Release(begins);
        PyBuffer_Release(data);
        return -1;
    }
    return 0;
}

static void release_frames(Py_buffer *data, Py_buffer *begins, Py_buffer *ends) {
    PyBuffer_Release(ends);
    PyBuffer_Release(begins);
    PyBuffer_Release(data);
}

/* The first entry of places[0:n] outside 0 .. size - 1, or -1 when there is none. */
static Py_ssize_t first_outside(const int64_t *places, Py_ssize_t n, Py_ssize_t size) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (places[i] < 0 || places[i] >= size)
            return i;
    return -1;
}

/* The payloads of a cut moved to out[at[i]] when every frame is sound: True; False when one is
 * damaged (out unchanged); NULL with an error set. */
static PyObject *cut_placed(PyObject *out, const int64_t *at, const Py_buffer *data,
                            const Py_buffer *begins, const Py_buffer *ends, int headers,
                            unsigned long long max_length) {
    PyObject *cut;
    int status = cut_checked(data, begins, ends, headers, max_length, &cut);
    if (status != CUT_SOUND)
        return status == CUT_ERROR ? NULL : Py_NewRef(Py_False);
    /* Freeing an entry replaced may run Python (an object's finalizer) that shrinks out:
     * PyList_SetItem then refuses the place (IndexError), never writes outside the list. */
    Py_ssize_t n = PyList_Size(cut);
    for (Py_ssize_t i = 0; i < n && status == CUT_SOUND; i++) {
        PyObject *payload = PyList_GetItem(cut, i);
        Py_INCREF(payload);
        if (PyList_SetItem(out, (Py_ssize_t)at[i], payload) < 0)
            status = CUT_ERROR;
    }
    Py_DECREF(cut);
    return status == CUT_ERROR ? NULL : Py_NewRef(Py_True);
}

/* cut_frames_into(out, places, data, begins, ends, headers, max_length): the payloads of
 * cut_frames put at out[places[i]] (in order i = 0, 1, ...) when every frame is sound: True; False,
 * out unchanged, when one is damaged.  The columns' lengths and the places are checked before any
 * frame: ValueError naming the first place outside out. */
PyObject *py_cut_frames_into(PyObject *self, PyObject *args) {
    PyObject *out, *places_obj, *data_obj, *begins_obj, *ends_obj, *max_obj;
    int headers;
    unsigned long long max_length;
    /* "K" would wrap: -1 the largest cap, 2^64 + 5 a cap of 5. */
    if (!PyArg_ParseTuple(args, "O!OOOOpO:cut_frames_into", &PyList_Type, &out, &places_obj,
                          &data_obj, &begins_obj, &ends_obj, &headers, &max_obj) ||
        max_length_of(max_obj, &max_length, "cut_frames_into") < 0)
        return NULL;
    Py_buffer places;
    if (borrow_int64(places_obj, &places, 0, "cut_frames_into: places") < 0)
        return NULL;
    Py_buffer data, begins, ends;
    if (borrow_frames(data_obj, begins_obj, ends_obj, &data, &begins, &ends) < 0) {
        PyBuffer_Release(&places);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = items_of(&begins), size = PyList_Size(out);
    int64_t *at = NULL;
    if (items_of(&ends) != n) {
        PyErr_Format(PyExc_ValueError, "cut_frames: %zd begins but %zd ends", n, items_of(&ends));
    } else if (items_of(&places) != n) {
        PyErr_Format(PyExc_ValueError, "cut_frames_into: %zd frames but %zd places", n,
                     items_of(&places));
    } else if ((at = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *at)) == NULL) {
        PyErr_NoMemory();
    } else {
        /* The places checked are the places used: a copy, as for the spans. */
        memcpy(at, places.buf, (size_t)n * sizeof *at);
        Py_ssize_t bad = first_outside(at, n, size);
        if (bad >= 0)
            PyErr_Format(PyExc_ValueError,
                         "cut_frames_into: places[%zd] = %lld is outside a list of %zd entries",
                         bad, (long long)at[bad], size);
        else
            result = cut_placed(out, at, &data, &begins, &ends, headers, max_length);
    }
    PyMem_Free(at);
    release_frames(&data, &begins, &ends);
    PyBuffer_Release(&places);
    return result;
}

/* Index arrays this long are worth releasing the GIL for; a read's few thousand entries take
 * about a microsecond, less than handing the GIL to another thread and waiting to get it back. */
#define SPAN_BOUNDS_RELEASE 32768

/* span_bounds(bounds, indices, max_gap, max_skip, begins, ends, gaps): spans.c's span_bounds into
 * the int64 arrays begins, ends and gaps (each of len(indices) entries at least); the number of
 * gaps.  An index that is not a known frame is a ValueError naming it. */
PyObject *py_span_bounds(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    long long max_gap, max_skip;
    if (!PyArg_ParseTuple(args, "OOLLOOO:span_bounds", &objs[0], &objs[1], &max_gap, &max_skip,
                          &objs[2], &objs[3], &objs[4]))
        return NULL;
    static const char *const names[5] = {"span_bounds: bounds", "span_bounds: indices",
                                         "span_bounds: begins", "span_bounds: ends",
                                         "span_bounds: gaps"};
    Py_buffer views[5];
    int borrowed = 0;
    for (; borrowed < 5; borrowed++)
        if (borrow_int64(objs[borrowed], &views[borrowed], borrowed >= 2, names[borrowed]) < 0)
            break;
    PyObject *result = NULL;
    if (borrowed == 5) {
        Py_ssize_t nb = items_of(&views[0]), n = items_of(&views[1]);
        Py_ssize_t room = items_of(&views[2]);
        if (items_of(&views[3]) < room)
            room = items_of(&views[3]);
        if (items_of(&views[4]) < room)
            room = items_of(&views[4]);
        size_t count = 0, bad = 0;
        int status = 0;
        if (room < n) {
            PyErr_Format(PyExc_ValueError,
                         "span_bounds: begins, ends and gaps must hold %zd entries each, the "
                         "smallest holds %zd", n, room);
        } else {
            const int64_t *indices = views[1].buf;
            if (n >= SPAN_BOUNDS_RELEASE) {
                Py_BEGIN_ALLOW_THREADS
                status = span_bounds(views[0].buf, (size_t)nb, indices, (size_t)n, max_gap,
                                     max_skip, views[2].buf, views[3].buf, views[4].buf, &count,
                                     &bad);
                Py_END_ALLOW_THREADS
            } else {
                status = span_bounds(views[0].buf, (size_t)nb, indices, (size_t)n, max_gap,
                                     max_skip, views[2].buf, views[3].buf, views[4].buf, &count,
                                     &bad);
            }
            if (status != 0)
                PyErr_Format(PyExc_ValueError,
                             "span_bounds: indices[%zu] = %lld is not one of the %zd frames "
                             "known", bad, (long long)indices[bad], nb > 0 ? nb - 1 : 0);
            else
                result = PyLong_FromSize_t(count);
        }
    }
    while (borrowed-- > 0)
        PyBuffer_Release(&views[borrowed]);
    return result;
}
