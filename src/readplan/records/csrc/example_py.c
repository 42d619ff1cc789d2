/* The Example parse kernel's Python side: borrowing the records and the outputs, checked. */
#include "example_py.h"

#include <stdlib.h>
#include <string.h>

#include "example.h"

/* Not an ex_status of the walk: the records are a sequence with an item that is not bytes. */
#define EX_NOT_BYTES 4

/* The records: a sequence of bytes objects (offsets None), or one buffer with int64 offsets of
 * n + 1 record bounds.  Either way record i starts at base[i] of the batch's bytes. */
typedef struct {
    PyObject *items; /* a tuple holding the records alive, in the sequence form */
    Py_buffer data, offsets;
    int buffered;
    const uint8_t **data_of;
    size_t *size;
    int64_t *base;
    ex_records r;
} source;

static void close_source(source *s) {
    free(s->data_of);
    free(s->size);
    free(s->base);
    if (s->buffered) {
        PyBuffer_Release(&s->offsets);
        PyBuffer_Release(&s->data);
    }
    Py_XDECREF(s->items);
}

static int alloc_source(source *s, Py_ssize_t n) {
    size_t count = n > 0 ? (size_t)n : 1;
    s->data_of = malloc(count * sizeof *s->data_of);
    s->size = malloc(count * sizeof *s->size);
    s->base = malloc(count * sizeof *s->base);
    s->r = (ex_records){s->data_of, s->size, s->base, (size_t)n};
    if (s->data_of == NULL || s->size == NULL || s->base == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int open_items(source *s, PyObject *records) {
    s->items = PySequence_Tuple(records);
    if (s->items == NULL)
        return -1;
    Py_ssize_t n = PyTuple_Size(s->items);
    if (alloc_source(s, n) < 0)
        return -1;
    int64_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GetItem(s->items, i);
        if (!PyBytes_Check(item))
            return EX_NOT_BYTES;
        s->data_of[i] = (const uint8_t *)PyBytes_AsString(item);
        s->size[i] = (size_t)PyBytes_Size(item);
        s->base[i] = at;
        at += (int64_t)s->size[i];
    }
    return 0;
}

static int open_buffer(source *s, PyObject *records, PyObject *offsets, const char *name) {
    if (borrow_bytes(records, &s->data, name) < 0)
        return -1;
    if (borrow_int64(offsets, &s->offsets, 0, name) < 0) {
        PyBuffer_Release(&s->data);
        return -1;
    }
    s->buffered = 1;
    Py_ssize_t n = items_of(&s->offsets) - 1;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "%s: offsets must hold n + 1 >= 1 bounds", name),
               -1;
    if (alloc_source(s, n) < 0)
        return -1;
    const int64_t *bound = s->offsets.buf;
    /* Each bound read once: the bounds checked are the bounds used, whoever writes the
     * caller's array meanwhile. */
    int64_t begin = n > 0 ? bound[0] : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t end = bound[i + 1];
        if (begin < 0 || end < begin || end > (int64_t)s->data.len)
            return PyErr_Format(PyExc_ValueError,
                                "%s: record %zd spans bytes [%lld, %lld) outside a buffer of "
                                "%zd bytes",
                                name, i, (long long)begin, (long long)end, s->data.len),
                   -1;
        s->data_of[i] = (const uint8_t *)s->data.buf + begin;
        s->size[i] = (size_t)(end - begin);
        s->base[i] = begin;
        begin = end;
    }
    return 0;
}

/* 0, EX_NOT_BYTES, or -1 with an exception; close_source() in every case. */
static int open_source(source *s, PyObject *records, PyObject *offsets, const char *name) {
    memset(s, 0, sizeof *s);
    if (offsets == Py_None)
        return open_items(s, records);
    return open_buffer(s, records, offsets, name);
}

static PyObject *scan_table(const ex_table *t) {
    PyObject *names = PyList_New((Py_ssize_t)t->count);
    PyObject *table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(t->count * 5 * 8));
    if (names == NULL || table == NULL) {
        Py_XDECREF(names);
        Py_XDECREF(table);
        return NULL;
    }
    int64_t *row = (int64_t *)PyBytes_AsString(table);
    for (size_t k = 0; k < t->count; k++, row += 5) {
        const ex_name *name = &t->names[k];
        PyObject *key =
            PyBytes_FromStringAndSize((const char *)name->key, (Py_ssize_t)name->key_len);
        if (key == NULL || PyList_SetItem(names, (Py_ssize_t)k, key) < 0) {
            Py_DECREF(names);
            Py_DECREF(table);
            return NULL;
        }
        row[0] = name->kind;
        row[1] = name->first;
        row[2] = name->other_kind;
        row[3] = name->other;
        row[4] = name->total;
    }
    return Py_BuildValue("(NN)", names, table);
}

PyObject *py_example_scan(PyObject *self, PyObject *args) {
    PyObject *records, *offsets;
    if (!PyArg_ParseTuple(args, "OO:example_scan", &records, &offsets))
        return NULL;
    source s;
    int opened = open_source(&s, records, offsets, "example_scan");
    if (opened != 0) {
        close_source(&s);
        return opened < 0 ? NULL : Py_BuildValue("(inO)", EX_NOT_BYTES, (Py_ssize_t)-1,
                                                 Py_None);
    }
    ex_table t;
    ex_table_init(&t);
    ex_result r;
    Py_BEGIN_ALLOW_THREADS
    r = ex_scan(&s.r, &t);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (r.status == EX_NOMEM) {
        PyErr_NoMemory();
    } else if (r.status != EX_OK) {
        result = Py_BuildValue("(inO)", r.status, (Py_ssize_t)r.at, Py_None);
    } else {
        PyObject *found = scan_table(&t);
        if (found != NULL)
            result = Py_BuildValue("(inN)", r.status, (Py_ssize_t)r.at, found);
    }
    ex_table_free(&t);
    close_source(&s);
    return result;
}

static int borrow_flags(PyObject *obj, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return -1;
    if (view->itemsize != 1) {
        PyErr_Format(PyExc_TypeError, "%s must be a writable uint8 or bool array", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The fill's outputs, borrowed writable; `views` are released by release_outputs(). */
enum { PLAN, INTS, FLOATS, STARTS, LENGTHS, SPLITS, PRESENT, OUTPUTS };

static int borrow_outputs(PyObject *const *objs, Py_buffer *views, int *held) {
    static const char *names[OUTPUTS] = {"plan", "ints", "floats", "starts",
                                         "lengths", "splits", "present"};
    for (*held = 0; *held < OUTPUTS; (*held)++) {
        int k = *held, bad;
        if (k == FLOATS)
            bad = borrow_uint32(objs[k], &views[k], names[k]);
        else if (k == PRESENT)
            bad = borrow_flags(objs[k], &views[k], names[k]);
        else
            bad = borrow_int64(objs[k], &views[k], k != PLAN, names[k]);
        if (bad < 0)
            return -1;
    }
    return 0;
}

static void release_outputs(Py_buffer *views, int held) {
    while (held-- > 0)
        PyBuffer_Release(&views[held]);
}

static int outputs_of(Py_buffer *v, size_t n, ex_out *out) {
    size_t names = (size_t)items_of(&v[PLAN]) / 3;
    if ((size_t)items_of(&v[PLAN]) != 3 * names || items_of(&v[STARTS]) != items_of(&v[LENGTHS]) ||
        (size_t)items_of(&v[SPLITS]) != names * (n + 1) ||
        (size_t)items_of(&v[PRESENT]) != names * n) {
        PyErr_SetString(PyExc_ValueError,
                        "example_fill: the outputs' sizes do not match the plan and the records");
        return -1;
    }
    *out = (ex_out){v[INTS].buf,    (size_t)items_of(&v[INTS]),   v[FLOATS].buf,
                    (size_t)items_of(&v[FLOATS]),                  v[STARTS].buf,
                    v[LENGTHS].buf, (size_t)items_of(&v[STARTS]), v[SPLITS].buf,
                    v[PRESENT].buf, v[PLAN].buf,                   names};
    return 0;
}

PyObject *py_example_fill(PyObject *self, PyObject *args) {
    PyObject *records, *offsets, *objs[OUTPUTS];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO:example_fill", &records, &offsets, &objs[PLAN],
                          &objs[INTS], &objs[FLOATS], &objs[STARTS], &objs[LENGTHS],
                          &objs[SPLITS], &objs[PRESENT]))
        return NULL;
    Py_buffer views[OUTPUTS];
    int held;
    if (borrow_outputs(objs, views, &held) < 0) {
        release_outputs(views, held);
        return NULL;
    }
    source s;
    int opened = open_source(&s, records, offsets, "example_fill");
    PyObject *result = NULL;
    ex_out out;
    if (opened > 0) {
        PyErr_SetString(PyExc_TypeError, "example_fill: every record must be bytes");
    } else if (opened == 0 && outputs_of(views, s.r.n, &out) == 0) {
        /* The plan is checked and used in a copy: another thread may write the caller's array
         * while the GIL is released, and a span checked must be the span written. */
        size_t plan_bytes = (size_t)views[PLAN].len;
        int64_t *plan = PyMem_Malloc(plan_bytes > 0 ? plan_bytes : 1);
        if (plan == NULL) {
            PyErr_NoMemory();
            close_source(&s);
            release_outputs(views, held);
            return NULL;
        }
        memcpy(plan, views[PLAN].buf, plan_bytes);
        out.plan = plan;
        ex_table t;
        ex_table_init(&t);
        ex_result r;
        Py_BEGIN_ALLOW_THREADS
        r = ex_fill(&s.r, &t, &out);
        Py_END_ALLOW_THREADS
        ex_table_free(&t);
        PyMem_Free(plan);
        if (r.status == EX_NOMEM)
            PyErr_NoMemory();
        else
            result = Py_BuildValue("(in)", r.status, (Py_ssize_t)r.at);
    }
    close_source(&s);
    release_outputs(views, held);
    return result;
}

static inline int holds(const ex_records *r, size_t k, int64_t start, int64_t length) {
    return k < r->n && start >= r->base[k] && length >= 0 &&
           length <= (int64_t)r->size[k] - (start - r->base[k]);
}

/* The record whose bytes hold [start, start + length), or -1.  Spans mostly come in record
 * order, so the record of the previous span (`hint`) and the next one are tried first. */
static Py_ssize_t record_of(const ex_records *r, int64_t start, int64_t length, size_t *hint) {
    for (size_t k = *hint; k < *hint + 2; k++)
        if (holds(r, k, start, length))
            return (Py_ssize_t)(*hint = k);
    size_t low = 0, high = r->n; /* the last record starting at or before `start` */
    while (high - low > 1) {
        size_t mid = low + (high - low) / 2;
        if (r->base[mid] <= start)
            low = mid;
        else
            high = mid;
    }
    if (!holds(r, low, start, length))
        return -1;
    return (Py_ssize_t)(*hint = low);
}

PyObject *py_example_bytes(PyObject *self, PyObject *args) {
    PyObject *records, *offsets, *starts_obj, *lengths_obj;
    if (!PyArg_ParseTuple(args, "OOOO:example_bytes", &records, &offsets, &starts_obj,
                          &lengths_obj))
        return NULL;
    Py_buffer starts, lengths;
    if (borrow_int64(starts_obj, &starts, 0, "example_bytes: starts") < 0)
        return NULL;
    if (borrow_int64(lengths_obj, &lengths, 0, "example_bytes: lengths") < 0) {
        PyBuffer_Release(&starts);
        return NULL;
    }
    source s;
    int opened = open_source(&s, records, offsets, "example_bytes");
    Py_ssize_t n = items_of(&starts);
    PyObject *out = NULL;
    if (opened > 0)
        PyErr_SetString(PyExc_TypeError, "example_bytes: every record must be bytes");
    else if (opened == 0 && items_of(&lengths) != n)
        PyErr_SetString(PyExc_ValueError, "example_bytes: as many starts as lengths are needed");
    else if (opened == 0)
        out = PyList_New(n);
    const int64_t *st = starts.buf, *ln = lengths.buf;
    size_t hint = 0;
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        /* Read once: the span checked is the span cut, whoever writes the arrays meanwhile. */
        int64_t start = st[i], length = ln[i];
        Py_ssize_t k = record_of(&s.r, start, length, &hint);
        PyObject *piece = NULL;
        if (k < 0)
            PyErr_Format(PyExc_ValueError,
                         "example_bytes: span %zd [%lld, + %lld) is not inside one record", i,
                         (long long)start, (long long)length);
        else
            piece = PyBytes_FromStringAndSize(
                (const char *)s.r.data[k] + (start - s.r.base[k]), (Py_ssize_t)length);
        if (piece == NULL || PyList_SetItem(out, i, piece) < 0)
            Py_CLEAR(out);
    }
    close_source(&s);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&starts);
    return out;
}
