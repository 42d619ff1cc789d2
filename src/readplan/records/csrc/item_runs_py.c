/* run_items: a streaming reader's items taken from its shards' streams run by run, each made on
 * next() (specs/native.md, "run_items"; the twin is readplan.reading.item_runs.run_items_pure).
 *
 * Run k delivers counts[k] records of file files[k], records firsts[k] .. of its shard's `stream`,
 * at the deliveries starts[k] .. (positions[d] is delivery d's position).  next() takes the next
 * record of the current run from its stream and makes its item at once, (record, epoch, position,
 * file, record index, names[file]) as an Item (item_type_py.h): no list of records,
 * no columns and no batch in between, and each record is copied out of the stream's buffer while
 * that buffer and the memory of the item just freed are still in the cache.  The iterator stops
 * at the first run it cannot take whole, as take_runs() does (runs_py.c): a run marked in
 * `closing`, a file without an open shard or stream, a stream that ends early or raises; then
 * `stopped` is (k, got, outcome) and the caller reads the rest of run k itself.  The GIL is held:
 * every step makes or moves Python objects. */
#include "item_runs_py.h"

#include "item_type_py.h"
#include "module_types.h"
#include "runs_py.h"

/* Outcomes, as take_runs() gives them (reading/run_streams.py). */
#define RUN_NOT_TAKEN 0
#define RUN_ENDED 1

typedef struct {
    PyObject_HEAD
    PyObject *cls, *shards, *files, *firsts, *counts, *closing, *starts, *names;
    int64_t epoch, file_index; /* the items' epoch; the current run's file */
    Py_buffer view; /* the caller's positions, held */
    const int64_t *positions;
    Py_ssize_t n_positions;
    Py_ssize_t k, hi;     /* the current run; the run the iterator stops at, at most */
    Py_ssize_t left, got; /* records of run k still to take; taken so far */
    int64_t record, at;   /* record index and delivery of the next record of run k */
    Py_ssize_t taken, total;
    PyObject *stream, *prefix; /* run k's, held while it is taken */
    iternextfunc next;
    PyObject *stopped; /* NULL while running; then (k, got, outcome) */
    int busy;          /* inside next(): the Python it runs must not take a step too */
} run_items;

static PyTypeObject *run_items_type;

static int traverse(run_items *self, visitproc visit, void *arg) {
    Py_VISIT(self->cls);
    Py_VISIT(self->shards);
    Py_VISIT(self->files);
    Py_VISIT(self->firsts);
    Py_VISIT(self->counts);
    Py_VISIT(self->closing);
    Py_VISIT(self->starts);
    Py_VISIT(self->names);
    Py_VISIT(self->stream);
    Py_VISIT(self->prefix);
    Py_VISIT(self->stopped);
    Py_VISIT(Py_TYPE((PyObject *)self));
    return 0;
}

static void drop_run(run_items *self) {
    Py_CLEAR(self->stream);
    Py_CLEAR(self->prefix);
    self->left = 0;
}

static int clear(run_items *self) {
    drop_run(self);
    Py_CLEAR(self->cls);
    Py_CLEAR(self->shards);
    Py_CLEAR(self->files);
    Py_CLEAR(self->firsts);
    Py_CLEAR(self->counts);
    Py_CLEAR(self->closing);
    Py_CLEAR(self->starts);
    Py_CLEAR(self->names);
    Py_CLEAR(self->stopped);
    PyBuffer_Release(&self->view); /* once: it forgets the buffer */
    self->positions = NULL;
    self->n_positions = 0;
    return 0;
}

static void dealloc(run_items *self) {
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    PyObject_GC_UnTrack(self);
    clear(self);
    freefunc free_slot = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_slot(self);
    Py_DECREF((PyObject *)type);
}

/* Stops the iterator at run k after `got` of its records, with `outcome` (a reference it takes,
 * NULL on a failure to make it); NULL, with an error set only when that failed. */
static PyObject *stop(run_items *self, Py_ssize_t k, Py_ssize_t got, PyObject *outcome) {
    drop_run(self);
    self->k = self->hi; /* nothing is taken after a stop */
    Py_CLEAR(self->stopped); /* a stop recorded by a refused re-entry gives way, as in the twin */
    if (outcome != NULL)
        self->stopped = Py_BuildValue("(nnN)", k, got, outcome);
    if (self->stopped == NULL) /* stopped without an outcome: the error propagates */
        self->stopped = Py_BuildValue("(nnO)", k, got, Py_None);
    return NULL;
}

/* Stops with the error that just propagated (a KeyboardInterrupt, a failed lookup, no memory):
 * the caller's iteration ends there, as it ends when take_runs() raises. */
static PyObject *broken(run_items *self) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    stop(self, self->k, self->got, NULL);
    PyErr_Restore(type, value, traceback);
    return NULL;
}

/* An entry of one of the caller's run lists, as a new reference; NULL with an error set. */
static PyObject *entry(PyObject *list, Py_ssize_t k) {
    PyObject *value = PyList_GetItem(list, k);
    Py_XINCREF(value);
    return value;
}

static int int_entry(PyObject *list, Py_ssize_t k, int64_t *out) {
    PyObject *value = entry(list, k);
    if (value == NULL)
        return -1;
    long long got = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (got == -1 && PyErr_Occurred())
        return -1;
    *out = got;
    return 0;
}

/* Run k taken up: 0; 1 when the iterator stopped at it (no error set); -1 with an error set. */
static int begin_run(run_items *self, Py_ssize_t k) {
    int64_t count, first, at;
    if (int_entry(self->counts, k, &count) < 0 || int_entry(self->firsts, k, &first) < 0 ||
        int_entry(self->starts, k, &at) < 0)
        return -1;
    if (count < 0) {
        PyErr_Format(PyExc_ValueError, "run_items: run %zd counts %lld records", k,
                     (long long)count);
        return -1;
    }
    if (at < 0 || at > self->n_positions || count > self->n_positions - at) {
        PyErr_Format(PyExc_ValueError,
                     "run_items: run %zd delivers %lld .. %lld, outside the %zd positions", k,
                     (long long)at, (long long)(at + count - 1), self->n_positions);
        return -1;
    }
    if (count > 0 && first > INT64_MAX - (count - 1)) { /* record++ would overflow */
        PyErr_Format(PyExc_ValueError, "run_items: run %zd reads records %lld .. past 2^63 - 1",
                     k, (long long)first);
        return -1;
    }
    PyObject *closing = entry(self->closing, k);
    if (closing == NULL)
        return -1;
    int last = PyObject_IsTrue(closing);
    Py_DECREF(closing);
    if (last < 0)
        return -1;
    PyObject *file = last ? NULL : entry(self->files, k);
    if (!last && file == NULL)
        return -1;
    PyObject *stream = last ? NULL : stream_of(self->shards, file);
    if (stream == NULL) {
        Py_XDECREF(file);
        if (PyErr_Occurred())
            return -1;
        stop(self, k, 0, PyLong_FromLong(RUN_NOT_TAKEN));
        return self->stopped == NULL ? -1 : 1;
    }
    iternextfunc next = (iternextfunc)PyType_GetSlot(Py_TYPE(stream), Py_tp_iternext);
    PyObject *prefix = next == NULL ? NULL : PyObject_GetItem(self->names, file);
    int64_t file_index = 0;
    int named = prefix != NULL && item_int64_of(file, "run_items: a run's file", &file_index) == 0;
    if (named && !PyUnicode_Check(prefix)) {
        item_prefix_error("run_items", file_index, prefix);
        named = 0;
    }
    if (!named)
        Py_CLEAR(prefix);
    if (prefix == NULL) {
        if (next == NULL)
            PyErr_Format(PyExc_TypeError, "run_items: the stream of run %zd is not an iterator", k);
        Py_DECREF(stream);
        Py_DECREF(file);
        return -1;
    }
    Py_DECREF(file); /* its int64 is what the items need */
    self->k = k;
    self->stream = stream;
    self->next = next;
    self->file_index = file_index;
    self->prefix = prefix;
    self->left = (Py_ssize_t)count;
    self->got = 0;
    self->record = first;
    self->at = at;
    return 0;
}

/* The stream of run k gave no record: stops the iterator with why. */
static PyObject *stream_stopped(run_items *self) {
    Py_ssize_t k = self->k, got = self->got;
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_StopIteration)) {
        PyErr_Clear();
        return stop(self, k, got, PyLong_FromLong(RUN_ENDED));
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return broken(self); /* KeyboardInterrupt, SystemExit: not the run's outcome */
    return stop(self, k, got, fetched_error());
}

/* The item of `record` (a reference it takes), the next record of run k. */
static PyObject *make_item(run_items *self, PyObject *record) {
    return item_new(record, self->prefix, self->epoch, self->positions[self->at], self->file_index,
                    self->record);
}

static PyObject *take_item(run_items *self) {
    if (self->stopped != NULL)
        return NULL;
    while (self->left == 0) {
        if (self->stopped != NULL)
            return NULL;
        Py_ssize_t k = self->stream == NULL ? self->k : self->k + 1;
        drop_run(self);
        if (k >= self->hi)
            return stop(self, self->hi, 0, PyLong_FromLong(RUN_NOT_TAKEN));
        self->k = k; /* a failure to take it up stops the iterator at it */
        self->got = 0;
        int begun = begin_run(self, k);
        if (begun < 0)
            return broken(self);
        if (begun > 0)
            return NULL;
    }
    PyObject *record = self->next(self->stream);
    if (record == NULL)
        return stream_stopped(self);
    PyObject *item = make_item(self, record);
    if (item == NULL)
        return broken(self);
    self->left--;
    self->got++;
    self->record++;
    self->at++;
    self->taken++;
    return item;
}

/* A stream, a lookup or a finalizer runs Python, which may call next() on this iterator (or
 * another thread may, while a read released the GIL): that call is refused as a running
 * generator refuses it, and stops the iterator as it stops the twin, without touching the run
 * the outer call is taking. */
static PyObject *next_item(run_items *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_ValueError, "generator already executing");
        if (self->stopped == NULL)
            self->stopped = Py_BuildValue("(nnO)", self->k, self->got, Py_None);
        return NULL;
    }
    /* A cleared iterator (the collector breaking a cycle) has nothing left to take. */
    if (self->cls == NULL)
        return NULL;
    self->busy = 1;
    PyObject *item = take_item(self);
    self->busy = 0;
    return item;
}

static PyObject *length_hint(run_items *self, PyObject *unused) {
    return PyLong_FromSsize_t(self->total - self->taken);
}

static PyObject *get_stopped(run_items *self, void *closure) {
    return Py_NewRef(self->stopped == NULL ? Py_None : self->stopped);
}

static PyObject *get_taken(run_items *self, void *closure) {
    return PyLong_FromSsize_t(self->taken);
}

static PyMethodDef methods[] = {
    {"__length_hint__", (PyCFunction)length_hint, METH_NOARGS,
     "The deliveries of the runs not yet handed out."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef getset[] = {
    {"stopped", (getter)get_stopped, NULL,
     "None while running; then (k, got, outcome) of the run it stopped at", NULL},
    {"taken", (getter)get_taken, NULL, "items handed out so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot slots[] = {
    {Py_tp_dealloc, dealloc},
    {Py_tp_traverse, traverse},
    {Py_tp_clear, clear},
    {Py_tp_iter, (void *)PyObject_SelfIter},
    {Py_tp_iternext, next_item},
    {Py_tp_methods, methods},
    {Py_tp_getset, getset},
    {Py_tp_doc, "A streaming reader's items, run by run from its shards' streams (run_items)."},
    {0, NULL},
};

static PyType_Spec spec = {
    "readplan.records._core.RunItems",
    sizeof(run_items),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    slots,
};

int item_runs_init(PyObject *module) { return add_type(module, &spec, "RunItems", &run_items_type); }

/* The deliveries of runs lo .. hi - 1 (their counts summed); -1 with an error set. */
static int count_deliveries(run_items *self, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t total = 0;
    for (Py_ssize_t k = lo; k < hi; k++) {
        int64_t count;
        if (int_entry(self->counts, k, &count) < 0)
            return -1;
        if (count < 0) {
            PyErr_Format(PyExc_ValueError, "run_items: run %zd counts %lld records", k,
                         (long long)count);
            return -1;
        }
        if (count > self->n_positions - total) {
            PyErr_Format(PyExc_ValueError,
                         "run_items: runs %zd .. %zd deliver more than the %zd positions", lo,
                         hi - 1, self->n_positions);
            return -1;
        }
        total += (Py_ssize_t)count;
    }
    self->total = total;
    return 0;
}

/* Holds the caller's positions: the reader's own array, which nothing writes meanwhile (a value
 * read while another thread writes it is a wrong position, never a read outside the array). */
static int hold_positions(run_items *self, PyObject *array) {
    if (borrow_int64(array, &self->view, 0, "run_items: positions") < 0)
        return -1;
    self->positions = self->view.buf;
    self->n_positions = items_of(&self->view);
    return 0;
}

PyObject *py_run_items(PyObject *module, PyObject *args) {
    PyObject *cls, *shards, *lists[5], *positions, *epoch, *names;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "O!OO!O!O!O!O!OnnOO:run_items", &PyType_Type, &cls,
                          &shards, &PyList_Type, &lists[0], &PyList_Type, &lists[1], &PyList_Type,
                          &lists[2], &PyList_Type, &lists[3], &PyList_Type, &lists[4], &positions,
                          &lo, &hi, &epoch, &names))
        return NULL;
    int64_t epoch_value;
    if (item_check_type(cls, "run_items") < 0 ||
        item_int64_of(epoch, "run_items: epoch", &epoch_value) < 0)
        return NULL;
    if (!PyDict_CheckExact(shards))
        return shards_not_a_dict("run_items", shards);
    Py_ssize_t n = PyList_Size(lists[0]);
    for (int j = 1; j < 5; j++)
        if (PyList_Size(lists[j]) != n)
            return PyErr_Format(PyExc_ValueError, "run_items: files, firsts, counts, closing and "
                                "starts must hold one entry per run");
    if (lo < 0 || lo > hi || hi > n)
        return PyErr_Format(PyExc_ValueError, "run_items: runs %zd .. %zd are not within 0 .. %zd",
                            lo, hi, n);
    allocfunc alloc = (allocfunc)PyType_GetSlot(run_items_type, Py_tp_alloc);
    run_items *self = (run_items *)alloc(run_items_type, 0);
    if (self == NULL)
        return NULL;
    /* alloc zeroed the fields: a failure below deallocates what was set. */
    self->cls = Py_NewRef(cls);
    self->shards = Py_NewRef(shards);
    PyObject **held[5] = {&self->files, &self->firsts, &self->counts, &self->closing,
                          &self->starts};
    for (int j = 0; j < 5; j++)
        *held[j] = Py_NewRef(lists[j]);
    self->epoch = epoch_value;
    self->names = Py_NewRef(names);
    self->k = lo;
    self->hi = hi;
    if (hold_positions(self, positions) < 0 || count_deliveries(self, lo, hi) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}
