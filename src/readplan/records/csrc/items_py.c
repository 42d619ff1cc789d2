/* ItemIter: a batch's items made one per next() (specs/native.md, "iter_items"; the twin is
 * readplan.reading.items.iter_items_pure, a list iterator over the same items made up front).
 *
 * iter_items(cls, records, names, epoch, positions, files, indices) checks the columns and names
 * each record's file when it is made; next() then makes the Item (item_type_py.h) of the next
 * record.  An item made when it is
 * asked for takes the memory the previous one freed, still in the cache, where a list of all
 * of a batch's items is made in memory that has gone cold by the time its last item is freed. */
#include "items_py.h"

#include <string.h>

#include "item_type_py.h"
#include "module_types.h"

typedef struct {
    PyObject_HEAD
    PyObject *records;   /* a tuple: the records, held as they were when the iterator was made */
    PyObject *held;      /* a tuple: each stretch's prefix */
    PyObject **prefixes; /* n: record k's prefix, borrowed from `held` */
    int64_t *columns;    /* positions, files, indices: 3 x n, a copy of the caller's arrays */
    int64_t epoch;
    Py_ssize_t n, next;
    int busy; /* inside next(): a finalizer that runs meanwhile must not take a step too */
} ItemIter;

static PyTypeObject *item_iter_type;
static int item_iter_traverse(ItemIter *self, visitproc visit, void *arg) {
    Py_VISIT(self->records);
    Py_VISIT(self->held);
    /* A heap type's instances visit their type. */
    Py_VISIT(Py_TYPE((PyObject *)self));
    return 0;
}

static int item_iter_clear(ItemIter *self) {
    Py_CLEAR(self->records);
    Py_CLEAR(self->held);
    return 0;
}

static void item_iter_dealloc(ItemIter *self) {
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    PyObject_GC_UnTrack(self);
    item_iter_clear(self);
    PyMem_Free(self->prefixes);
    PyMem_Free(self->columns);
    freefunc free_slot = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_slot(self);
    Py_DECREF((PyObject *)type);
}

/* The item of record k: a new reference, or NULL with an error set. */
static PyObject *make_item(ItemIter *self, Py_ssize_t k) {
    const int64_t *c = self->columns;
    Py_ssize_t n = self->n;
    return item_new(Py_XNewRef(PyTuple_GetItem(self->records, k)), self->prefixes[k],
                    self->epoch, c[k], c[n + k], c[2 * n + k]);
}

static PyObject *item_iter_next(ItemIter *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_ValueError, "generator already executing");
        return NULL;
    }
    /* A cleared iterator (the collector breaking a cycle) has nothing left to make. */
    if (self->records == NULL || self->next >= self->n)
        return NULL; /* no error set: StopIteration */
    self->busy = 1;
    PyObject *item = make_item(self, self->next);
    self->busy = 0;
    if (item != NULL)
        self->next++;
    return item;
}

static PyObject *item_iter_length_hint(ItemIter *self, PyObject *unused) {
    return PyLong_FromSsize_t(self->n - self->next);
}

static PyMethodDef item_iter_methods[] = {
    {"__length_hint__", (PyCFunction)item_iter_length_hint, METH_NOARGS,
     "The number of items not yet made."},
    {NULL, NULL, 0, NULL},
};

static PyObject *self_iter(PyObject *self) { return Py_NewRef(self); }

static PyType_Slot item_iter_slots[] = {
    {Py_tp_dealloc, item_iter_dealloc},
    {Py_tp_traverse, item_iter_traverse},
    {Py_tp_clear, item_iter_clear},
    {Py_tp_iter, self_iter},
    {Py_tp_iternext, item_iter_next},
    {Py_tp_methods, item_iter_methods},
    {Py_tp_doc, "A batch's items, each made when it is asked for (iter_items)."},
    {0, NULL},
};

static PyType_Spec item_iter_spec = {
    "readplan.records._core.ItemIter",
    sizeof(ItemIter),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    item_iter_slots,
};

int items_add_types(PyObject *module) {
    return add_type(module, &item_iter_spec, "ItemIter", &item_iter_type);
}

/* Each record's prefix, names[file] (a str), looked up once per stretch of records of one file
 * and held in self->held.  -1 with the lookup's error, or a TypeError for a prefix not a str. */
static int name_files(ItemIter *self, PyObject *names) {
    Py_ssize_t n = self->n;
    const int64_t *files = self->columns + n;
    PyObject *held = PyList_New(0);
    if (held == NULL)
        return -1;
    PyObject *key = NULL, *prefix = NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (k == 0 || files[k] != files[k - 1]) {
            key = PyLong_FromLongLong(files[k]);
            if (key == NULL)
                goto fail;
            prefix = PyObject_GetItem(names, key);
            Py_DECREF(key);
            if (prefix != NULL && !PyUnicode_Check(prefix)) {
                item_prefix_error("iter_items", files[k], prefix);
                Py_CLEAR(prefix);
            }
            if (prefix == NULL || PyList_Append(held, prefix) < 0) { /* `held` keeps it */
                Py_XDECREF(prefix);
                goto fail;
            }
            Py_DECREF(prefix);
        }
        self->prefixes[k] = prefix;
    }
    self->held = PyList_AsTuple(held);
    Py_DECREF(held);
    return self->held == NULL ? -1 : 0;
fail:
    Py_DECREF(held);
    return -1;
}

/* Copies the three int64 columns of n entries into self->columns; -1 with an error set. */
static int copy_columns(ItemIter *self, PyObject *arrays[3]) {
    for (int c = 0; c < 3; c++) {
        Py_buffer view;
        if (borrow_int64(arrays[c], &view, 0, "iter_items: positions/files/indices") < 0)
            return -1;
        Py_ssize_t got = items_of(&view);
        if (got == self->n)
            memcpy(self->columns + c * self->n, view.buf, (size_t)got * sizeof(int64_t));
        PyBuffer_Release(&view);
        if (got != self->n) {
            PyErr_SetString(PyExc_ValueError,
                            "iter_items: every column must hold one entry per record");
            return -1;
        }
    }
    return 0;
}

PyObject *py_iter_items(PyObject *module, PyObject *args) {
    PyObject *cls, *records, *names, *epoch, *arrays[3];
    if (!PyArg_ParseTuple(args, "O!O!OOOOO:iter_items", &PyType_Type, &cls, &PyList_Type, &records,
                          &names, &epoch, &arrays[0], &arrays[1], &arrays[2]))
        return NULL;
    int64_t epoch_value;
    if (item_check_type(cls, "iter_items") < 0 ||
        item_int64_of(epoch, "iter_items: epoch", &epoch_value) < 0)
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(item_iter_type, Py_tp_alloc);
    ItemIter *self = (ItemIter *)alloc(item_iter_type, 0);
    if (self == NULL)
        return NULL;
    /* alloc zeroed the fields: a failure below deallocates what was set. */
    self->n = PyList_Size(records);
    self->epoch = epoch_value;
    size_t slots = (size_t)(self->n > 0 ? self->n : 1);
    self->columns = PyMem_Malloc(3 * slots * sizeof(int64_t));
    self->prefixes = PyMem_Malloc(slots * sizeof(PyObject *));
    if (self->columns == NULL || self->prefixes == NULL) {
        PyErr_NoMemory();
        Py_DECREF(self);
        return NULL;
    }
    /* A tuple of the records: what the caller does with its list later changes no item. */
    self->records = PyList_AsTuple(records);
    if (self->records == NULL || copy_columns(self, arrays) < 0 || name_files(self, names) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}
