/* readplan.records._core: the compiled kernels behind readplan.records.native (specs/native.md).
 *
 * Each function here has a pure-Python twin with the same contract; the Python layer words every
 * error a file's bytes cause, so these functions only report where and why they stopped.  Every
 * offset and length taken from the caller or from the bytes is checked against the buffer before
 * it is used, and the GIL is released around every loop over a buffer. */
#include "buffers.h"
#include "crc32c.h"
#include "example_py.h"
#include "frames.h"
#include "frames_py.h"
#include "images.h"
#include "item_runs_py.h"
#include "item_type_py.h"
#include "items_py.h"
#include "record_run_py.h"
#include "runs_py.h"

#include <limits.h>
#include <string.h>

/* Below this many bytes, releasing and taking back the GIL costs more than the CRC. */
#define GIL_FREE_BYTES (1 << 16)

/* A CRC to continue from: an int in [0, 2^32), else ValueError (never taken modulo 2^64). */
static int crc_value_of(PyObject *obj, uint32_t *out, const char *name) {
    if (obj == NULL) {
        *out = 0;
        return 0;
    }
    PyObject *value = PyNumber_Index(obj);
    if (value == NULL)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if ((v == ULLONG_MAX && PyErr_Occurred()) || v > 0xFFFFFFFFull) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_OverflowError)) {
            Py_DECREF(value);
            return -1;
        }
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: value must be a uint32, got %S", name, value);
        Py_DECREF(value);
        return -1;
    }
    Py_DECREF(value);
    *out = (uint32_t)v;
    return 0;
}

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    PyObject *obj, *value_obj = NULL;
    uint32_t crc;
    if (!PyArg_ParseTuple(args, "O|O:crc32c", &obj, &value_obj) ||
        crc_value_of(value_obj, &crc, "crc32c") < 0)
        return NULL;
    Py_buffer view;
    if (borrow_bytes(obj, &view, "crc32c: data") < 0)
        return NULL;
    if (view.len >= GIL_FREE_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32c_update(crc, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32c_update(crc, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *py_crc32c_table(PyObject *self, PyObject *args) {
    PyObject *obj, *value_obj = NULL;
    uint32_t value;
    if (!PyArg_ParseTuple(args, "O|O:crc32c_table", &obj, &value_obj) ||
        crc_value_of(value_obj, &value, "crc32c_table") < 0)
        return NULL;
    Py_buffer view;
    if (borrow_bytes(obj, &view, "crc32c_table: data") < 0)
        return NULL;
    uint32_t crc = crc32c_table_update(value, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *py_scan_frames(PyObject *self, PyObject *args) {
    PyObject *data_obj, *starts_obj, *lengths_obj, *max_obj;
    Py_ssize_t off, limit;
    unsigned long long max_length;
    int verify;
    if (!PyArg_ParseTuple(args, "OnnOpOO:scan_frames", &data_obj, &off, &limit, &max_obj,
                          &verify, &starts_obj, &lengths_obj))
        return NULL;
    if (off < 0)
        return PyErr_Format(PyExc_ValueError, "scan_frames: off must be >= 0, got %zd", off);
    if (max_length_of(max_obj, &max_length, "scan_frames") < 0)
        return NULL;
    Py_buffer data, starts, lengths;
    if (borrow_bytes(data_obj, &data, "scan_frames: data") < 0)
        return NULL;
    if (borrow_int64(starts_obj, &starts, 1, "scan_frames: starts") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (borrow_int64(lengths_obj, &lengths, 1, "scan_frames: lengths") < 0) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&data);
        return NULL;
    }
    size_t capacity = (size_t)items_of(&starts);
    if ((size_t)items_of(&lengths) < capacity)
        capacity = (size_t)items_of(&lengths);
    size_t most = limit < 0 ? capacity : (size_t)limit;
    scan_result r;
    Py_BEGIN_ALLOW_THREADS
    r = scan_frames(data.buf, (size_t)data.len, (size_t)off, most, max_length, verify, starts.buf,
                    lengths.buf, capacity);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&data);
    return Py_BuildValue("(nni)", (Py_ssize_t)r.count, (Py_ssize_t)r.end, r.stop);
}

/* scan_frames() and cut() in one pass, frame by frame: each payload's CRC is computed while it is
 * copied into its bytes object (one pass over its bytes; the object is dropped if the CRC fails).
 * Every length is checked against the buffer before anything is allocated.  The GIL is held
 * throughout, since each frame makes a bytes object. */
static PyObject *py_scan_records(PyObject *self, PyObject *args) {
    PyObject *data_obj, *max_obj;
    Py_ssize_t off, limit;
    unsigned long long max_length;
    int verify;
    if (!PyArg_ParseTuple(args, "OnnOp:scan_records", &data_obj, &off, &limit, &max_obj,
                          &verify))
        return NULL;
    if (off < 0)
        return PyErr_Format(PyExc_ValueError, "scan_records: off must be >= 0, got %zd", off);
    if (max_length_of(max_obj, &max_length, "scan_records") < 0)
        return NULL;
    Py_buffer data;
    if (borrow_bytes(data_obj, &data, "scan_records: data") < 0)
        return NULL;
    PyObject *records = PyList_New(0);
    const unsigned char *base = data.buf;
    size_t size = (size_t)data.len, at = (size_t)off, count = 0;
    size_t most = limit < 0 ? SIZE_MAX : (size_t)limit;
    int stop = SCAN_LIMIT;
    length_crcs known = {0, 0, 0};
    while (records != NULL && count < most) {
        uint64_t length;
        int why = frame_header(base, size, at, max_length, &known, &length);
        if (why >= 0) {
            stop = why;
            break;
        }
        const unsigned char *frame = base + at;
        PyObject *piece = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length);
        if (piece == NULL) {
            Py_CLEAR(records);
            break;
        }
        unsigned char *into = (unsigned char *)PyBytes_AsString(piece);
        if (!verify) {
            memcpy(into, frame + 12, (size_t)length);
        } else if (crc32c_mask(crc32c_copy(into, frame + 12, (size_t)length)) !=
                   stored_data_crc(frame, length)) {
            Py_DECREF(piece);
            stop = SCAN_DATA_CRC;
            break;
        }
        if (PyList_Append(records, piece) < 0)
            Py_CLEAR(records);
        Py_DECREF(piece);
        count++;
        at += (size_t)length + 16;
    }
    PyBuffer_Release(&data);
    if (records == NULL)
        return NULL;
    PyObject *result = Py_BuildValue("(Oni)", records, (Py_ssize_t)at, stop);
    Py_DECREF(records);
    return result;
}

/* The spans [st[i], st[i] + ln[i]) of the data, checked against it.  st and ln are a copy of the
 * caller's arrays, made before the check: another thread may write those arrays meanwhile
 * (numpy copies without the GIL), and a span checked must be the span used. */
typedef struct {
    Py_buffer data;
    int64_t *st, *ln;
    Py_ssize_t n;
} spans;

static void release_spans(spans *s) {
    PyMem_Free(s->st);
    PyBuffer_Release(&s->data);
}

static int borrow_spans(spans *s, PyObject *data, PyObject *starts_obj, PyObject *lengths_obj,
                        const char *name) {
    if (borrow_bytes(data, &s->data, name) < 0)
        return -1;
    Py_buffer starts, lengths;
    if (borrow_int64(starts_obj, &starts, 0, name) < 0) {
        PyBuffer_Release(&s->data);
        return -1;
    }
    if (borrow_int64(lengths_obj, &lengths, 0, name) < 0) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&s->data);
        return -1;
    }
    s->n = items_of(&starts);
    s->st = NULL;
    int status = -1;
    if (items_of(&lengths) != s->n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd starts but %zd lengths", name, s->n,
                     items_of(&lengths));
    } else if ((s->st = PyMem_Malloc(2 * (size_t)(s->n > 0 ? s->n : 1) * sizeof *s->st)) == NULL) {
        PyErr_NoMemory();
    } else {
        s->ln = s->st + s->n;
        memcpy(s->st, starts.buf, (size_t)s->n * sizeof *s->st);
        memcpy(s->ln, lengths.buf, (size_t)s->n * sizeof *s->ln);
        status = check_spans(s->st, s->ln, s->n, s->data.len, name);
    }
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&starts);
    if (status < 0)
        release_spans(s);
    return status;
}

static PyObject *py_cut(PyObject *self, PyObject *args) {
    PyObject *data_obj, *starts_obj, *lengths_obj;
    if (!PyArg_ParseTuple(args, "OOO:cut", &data_obj, &starts_obj, &lengths_obj))
        return NULL;
    spans s;
    if (borrow_spans(&s, data_obj, starts_obj, lengths_obj, "cut") < 0)
        return NULL;
    PyObject *out = PyList_New(s.n);
    const char *base = s.data.buf;
    for (Py_ssize_t i = 0; out != NULL && i < s.n; i++) {
        PyObject *piece = PyBytes_FromStringAndSize(base + s.st[i], (Py_ssize_t)s.ln[i]);
        if (piece == NULL || PyList_SetItem(out, i, piece) < 0)
            Py_CLEAR(out);
    }
    release_spans(&s);
    return out;
}

static PyObject *py_pack(PyObject *self, PyObject *args) {
    PyObject *data_obj, *starts_obj, *lengths_obj, *values_obj;
    Py_ssize_t at;
    if (!PyArg_ParseTuple(args, "OOOOn:pack", &data_obj, &starts_obj, &lengths_obj, &values_obj,
                          &at))
        return NULL;
    spans s;
    if (borrow_spans(&s, data_obj, starts_obj, lengths_obj, "pack") < 0)
        return NULL;
    Py_buffer values;
    if (PyObject_GetBuffer(values_obj, &values, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        release_spans(&s);
        return NULL;
    }
    const int64_t *st = s.st, *ln = s.ln;
    /* Each length is within the data, but their sum can pass PY_SSIZE_T_MAX (a huge mapping
     * with many spans): it is checked against the room left as it grows. */
    Py_ssize_t total = 0, room = at < 0 || at > values.len ? -1 : values.len - at;
    int over = 0;
    for (Py_ssize_t i = 0; i < s.n && !over; i++) {
        if ((Py_ssize_t)ln[i] > PY_SSIZE_T_MAX - total)
            over = 1;
        else
            total += (Py_ssize_t)ln[i];
    }
    PyObject *result = NULL;
    if (over) {
        PyErr_Format(PyExc_ValueError,
                     "pack: more than %zd bytes at %zd do not fit a buffer of %zd", total, at,
                     values.len);
    } else if (room < 0 || total > room) {
        PyErr_Format(PyExc_ValueError, "pack: %zd bytes at %zd do not fit a buffer of %zd", total,
                     at, values.len);
    } else {
        char *out = (char *)values.buf + at;
        const char *base = s.data.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < s.n; i++) {
            /* values may be the data itself, or overlap it: memmove, as the twin's copy. */
            memmove(out, base + st[i], (size_t)ln[i]);
            out += ln[i];
        }
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(at + total);
    }
    PyBuffer_Release(&values);
    release_spans(&s);
    return result;
}


static int floats3(PyObject *obj, float out[3], const char *name) {
    if (!PyArg_ParseTuple(obj, "fff", &out[0], &out[1], &out[2])) {
        PyErr_Format(PyExc_TypeError, "gather_images: %s must be a tuple of 3 floats", name);
        return -1;
    }
    return 0;
}

static PyObject *py_gather_images(PyObject *self, PyObject *args) {
    PyObject *images_obj, *rows_obj, *flips_obj, *scale_obj, *shift_obj, *out_obj;
    Py_ssize_t n, h, w;
    int kind, channels_last;
    if (!PyArg_ParseTuple(args, "OnnnOOO!O!Oip:gather_images", &images_obj, &n, &h, &w, &rows_obj,
                          &flips_obj, &PyTuple_Type, &scale_obj, &PyTuple_Type, &shift_obj,
                          &out_obj, &kind, &channels_last))
        return NULL;
    image_batch b = {0};
    if (n < 0 || h < 0 || w < 0 || kind < IMAGE_U8 || kind > IMAGE_F16)
        return PyErr_Format(PyExc_ValueError, "gather_images: bad shape (%zd, %zd, %zd) or kind %d",
                            n, h, w, kind);
    if (floats3(scale_obj, b.scale, "scale") < 0 || floats3(shift_obj, b.shift, "shift") < 0)
        return NULL;
    Py_buffer images, rows, flips = {0}, out;
    if (borrow_bytes(images_obj, &images, "gather_images: images") < 0)
        return NULL;
    if (borrow_int64(rows_obj, &rows, 0, "gather_images: rows") < 0) {
        PyBuffer_Release(&images);
        return NULL;
    }
    int has_flips = flips_obj != Py_None;
    if (has_flips && borrow_bytes(flips_obj, &flips, "gather_images: flips") < 0) {
        PyBuffer_Release(&rows);
        PyBuffer_Release(&images);
        return NULL;
    }
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        if (has_flips)
            PyBuffer_Release(&flips);
        PyBuffer_Release(&rows);
        PyBuffer_Release(&images);
        return NULL;
    }
    Py_ssize_t count = items_of(&rows);
    Py_ssize_t item = kind == IMAGE_U8 ? 1 : kind == IMAGE_F32 ? 4 : 2;
    /* Every size in Py_ssize_t without overflow: n, h and w are bounded by the buffers. */
    int fits = h == 0 || w == 0 || (w <= PY_SSIZE_T_MAX / 3 / h &&
                                    n <= PY_SSIZE_T_MAX / (3 * h * w));
    const char *problem = NULL;
    if (!fits || images.len != n * h * w * 3)
        problem = "images must hold n * h * w * 3 bytes";
    else if (has_flips && flips.len != count)
        problem = "flips must hold one byte per row";
    else if (out.itemsize != item)
        problem = count ? "out must hold rows * h * w * 3 items of the output type"
                        : "out must be empty for no rows";
    else if (count && (h * w * 3 > PY_SSIZE_T_MAX / item / count ||
                       out.len != count * h * w * 3 * item))
        problem = "out must hold rows * h * w * 3 items of the output type";
    else if (!count && out.len != 0)
        problem = "out must be empty for no rows";
    /* The rows are checked and used in a copy: another thread may write the caller's array
     * while the GIL is released, and a row checked must be the row read. */
    int64_t *r = NULL;
    int failed = problem != NULL;
    if (!failed && count > 0) {
        r = PyMem_Malloc((size_t)count * sizeof *r);
        if (r == NULL) {
            PyErr_NoMemory();
            failed = 1;
        } else {
            memcpy(r, rows.buf, (size_t)count * sizeof *r);
        }
    }
    for (Py_ssize_t k = 0; !failed && problem == NULL && k < count; k++)
        if (r[k] < 0 || r[k] >= n)
            problem = "a row is outside [0, n)";
    if (problem != NULL) {
        PyErr_Format(PyExc_ValueError, "gather_images: %s", problem);
        failed = 1;
    }
    if (!failed) {
        b.images = images.buf;
        b.n = (size_t)n, b.h = (size_t)h, b.w = (size_t)w;
        b.rows = r;
        b.flips = has_flips ? flips.buf : NULL;
        b.count = (size_t)count;
        b.kind = kind;
        b.channels_last = channels_last;
        Py_BEGIN_ALLOW_THREADS
        gather_images(&b, out.buf);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(r);
    PyBuffer_Release(&out);
    if (has_flips)
        PyBuffer_Release(&flips);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&images);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_half_of(PyObject *self, PyObject *args) {
    float value;
    if (!PyArg_ParseTuple(args, "f:half_of", &value))
        return NULL;
    return PyLong_FromLong(half_of(value));
}


/* The n items of make_items(), the columns checked: a new list, or NULL with an error set. */
static PyObject *made_items(PyObject *records, PyObject *prefixes, int64_t epoch,
                            const int64_t *positions, const int64_t *files,
                            const int64_t *indices) {
    Py_ssize_t n = PyList_Size(records);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *prefix = PyList_GetItem(prefixes, i);
        if (!PyUnicode_Check(prefix)) {
            item_prefix_error("make_items", files[i], prefix);
            Py_CLEAR(out);
            break;
        }
        PyObject *item = item_new(Py_NewRef(PyList_GetItem(records, i)), prefix, epoch,
                                  positions[i], files[i], indices[i]);
        if (item == NULL || PyList_SetItem(out, i, item) < 0)
            Py_CLEAR(out);
    }
    return out;
}

/* make_items(cls, records, prefixes, epoch, positions, files, indices): a list of Item
 * (item_type_py.h), one per record. */
static PyObject *py_make_items(PyObject *self, PyObject *args) {
    PyObject *cls, *records, *prefixes, *epoch, *positions_obj, *files_obj, *indices_obj;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOO:make_items", &PyType_Type, &cls, &PyList_Type,
                          &records, &PyList_Type, &prefixes, &epoch, &positions_obj, &files_obj,
                          &indices_obj))
        return NULL;
    int64_t epoch_value;
    if (item_check_type(cls, "make_items") < 0 ||
        item_int64_of(epoch, "make_items: epoch", &epoch_value) < 0)
        return NULL;
    Py_buffer arrays[3];
    PyObject *objs[3] = {positions_obj, files_obj, indices_obj};
    int held = 0;
    for (; held < 3; held++)
        if (borrow_int64(objs[held], &arrays[held], 0, "make_items: positions/files/indices") < 0)
            break;
    PyObject *out = NULL;
    Py_ssize_t n = PyList_Size(records);
    if (held == 3 && (PyList_Size(prefixes) != n || items_of(&arrays[0]) != n ||
                      items_of(&arrays[1]) != n || items_of(&arrays[2]) != n)) {
        PyErr_SetString(PyExc_ValueError, "make_items: every column must hold one entry per record");
    } else if (held == 3) {
        out = made_items(records, prefixes, epoch_value, arrays[0].buf, arrays[1].buf,
                         arrays[2].buf);
    }
    while (held-- > 0)
        PyBuffer_Release(&arrays[held]);
    return out;
}

static PyMethodDef methods[] = {
    {"crc32c", py_crc32c, METH_VARARGS,
     "crc32c(data, value=0, /): the CRC32C of data, continuing from value."},
    {"crc32c_table", py_crc32c_table, METH_VARARGS,
     "crc32c_table(data, value=0, /): crc32c() by the table walk, whatever the processor."},
    {"scan_frames", py_scan_frames, METH_VARARGS,
     "scan_frames(data, off, limit, max_length, verify, starts, lengths, /) -> (count, end, stop)"},
    {"scan_records", py_scan_records, METH_VARARGS,
     "scan_records(data, off, limit, max_length, verify, /) -> (records, end, stop)"},
    {"gather_images", py_gather_images, METH_VARARGS,
     "gather_images(images, n, h, w, rows, flips, scale, shift, out, kind, channels_last, /)"},
    {"half_of", py_half_of, METH_VARARGS, "half_of(value, /): the binary16 bits of a float"},
    {"make_items", py_make_items, METH_VARARGS,
     "make_items(cls, records, prefixes, epoch, positions, files, indices, /) -> list"},
    {"cut", py_cut, METH_VARARGS, "cut(data, starts, lengths, /) -> list of bytes of the spans"},
    {"pack", py_pack, METH_VARARGS,
     "pack(data, starts, lengths, values, at, /) -> end: the spans copied into values from at"},
    EXAMPLE_METHODS
    ITEMS_METHODS
    ITEM_RUNS_METHODS
    FRAMES_METHODS
    RECORD_RUN_METHODS
    RUNS_METHODS
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_core", "readplan's compiled kernels (specs/native.md).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
    const uint16_t probe = 1;
    if (*(const unsigned char *)&probe != 1) {
        PyErr_SetString(PyExc_ImportError,
                        "readplan's compiled core reads little-endian words; this host is not");
        return NULL;
    }
    crc32c_init();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddStringConstant(m, "CRC32C_ENGINE", crc32c_engine()) < 0 ||
                      items_add_types(m) < 0 || item_type_add(m) < 0 || record_run_init(m) < 0 ||
                      item_runs_init(m) < 0))
        Py_CLEAR(m);
    return m;
}
