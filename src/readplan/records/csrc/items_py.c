/* ItemIter: a batch's items made one per next() (specs/native.md, "iter_items"; the twin is
 * readplan.reading.items.iter_items_pure, a list iterator over the same items made up front).
 *
 * iter_items(cls, records, names, epoch, positions, files, indices) checks the columns and names
 * each record's file when it is made; next() then makes the tuple-subclass instance
 * (record, epoch, position, file, index, prefix) of the next record.  An item made when it is
 * asked for takes the memory the previous one freed, still in the cache, where a list of all
 * of a batch's items is made in memory that has gone cold by the time its last item is freed. */
#include "items_py.h"

#include <string.h>

#include "module_types.h"

typedef struct {
    PyObject_HEAD
    PyObject *cls;      /* the item type, a tuple subclass */
    PyObject *records;  /* a tuple: the records, held as they were when the iterator was made */
    PyObject *epoch;
    PyObject *held;     /* a tuple: each stretch's file index (an int) and prefix */
    PyObject **named;   /* 2 x n: record k's file index and prefix, borrowed from `held` */
    int64_t *columns;   /* positions, files, indices: 3 x n, a copy of the caller's arrays */
    allocfunc alloc;
    Py_ssize_t n, next;
    int busy; /* inside next(): a finalizer that runs meanwhile must not take a step too */
} ItemIter;

static PyTypeObject *item_iter_type;
/* A class defined in Python on tuple: its instances' dealloc, which frees exactly the fields the
 * instance holds; and the last item class check_item_type() accepted (a strong reference). */
static destructor python_tuple_dealloc;
static PyObject *accepted_item_type;

static int item_iter_traverse(ItemIter *self, visitproc visit, void *arg) {
    Py_VISIT(self->cls);
    Py_VISIT(self->records);
    Py_VISIT(self->epoch);
    Py_VISIT(self->held);
    /* A heap type's instances visit their type. */
    Py_VISIT(Py_TYPE((PyObject *)self));
    return 0;
}

static int item_iter_clear(ItemIter *self) {
    Py_CLEAR(self->cls);
    Py_CLEAR(self->records);
    Py_CLEAR(self->epoch);
    Py_CLEAR(self->held);
    return 0;
}

static void item_iter_dealloc(ItemIter *self) {
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    PyObject_GC_UnTrack(self);
    item_iter_clear(self);
    PyMem_Free(self->named);
    PyMem_Free(self->columns);
    freefunc free_slot = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_slot(self);
    Py_DECREF((PyObject *)type);
}

/* The item of record k: a new reference, or NULL with an error set. */
static PyObject *make_item(ItemIter *self, Py_ssize_t k) {
    const int64_t *c = self->columns;
    Py_ssize_t n = self->n;
    /* The file's int is shared by the records of its stretch: no new int per item. */
    PyObject *fields[6] = {PyTuple_GetItem(self->records, k), self->epoch,
                           PyLong_FromLongLong(c[k]), self->named[2 * k],
                           PyLong_FromLongLong(c[2 * n + k]), self->named[2 * k + 1]};
    Py_XINCREF(fields[0]);
    Py_INCREF(fields[1]);
    Py_INCREF(fields[3]);
    Py_INCREF(fields[5]);
    return new_item(self->alloc, self->cls, fields);
}

PyObject *new_item(allocfunc alloc, PyObject *cls, PyObject *fields[6]) {
    PyObject *item = alloc((PyTypeObject *)cls, 6);
    int bad = item == NULL;
    for (int f = 0; f < 6; f++) {
        if (fields[f] == NULL || bad) {
            bad = 1;
            Py_XDECREF(fields[f]);
        } else if (PyTuple_SetItem(item, f, fields[f]) < 0) {
            bad = 1; /* SetItem took the field's reference */
        }
    }
    if (bad) {
        Py_XDECREF(item);
        return NULL;
    }
    return item;
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

/* Whether cls's attribute `name` equals tuple's: 1 or 0, -1 with an error set. */
static int same_as_tuple(PyObject *cls, const char *name) {
    PyObject *mine = PyObject_GetAttrString(cls, name);
    PyObject *tuples = PyObject_GetAttrString((PyObject *)&PyTuple_Type, name);
    int equal = mine == NULL || tuples == NULL ? -1 : PyObject_RichCompareBool(mine, tuples, Py_EQ);
    Py_XDECREF(mine);
    Py_XDECREF(tuples);
    return equal;
}

int check_item_type(PyObject *cls, const char *who) {
    if (cls == accepted_item_type)
        return 0;
    PyTypeObject *type = (PyTypeObject *)cls;
    int fits = (PyType_GetFlags(type) & Py_TPFLAGS_HEAPTYPE) &&
               (destructor)PyType_GetSlot(type, Py_tp_dealloc) == python_tuple_dealloc;
    if (fits) {
        PyObject *base = PyObject_GetAttrString(cls, "__base__");
        if (base == NULL)
            return -1;
        fits = base == (PyObject *)&PyTuple_Type;
        Py_DECREF(base);
    }
    for (int j = 0; fits == 1 && j < 2; j++)
        fits = same_as_tuple(cls, j == 0 ? "__basicsize__" : "__itemsize__");
    if (fits < 0)
        return -1;
    if (!fits) {
        PyErr_Format(PyExc_TypeError,
                     "%s: cls must be a class defined in Python directly on tuple with "
                     "__slots__ = () (as readplan's Item), got %R", who, cls);
        return -1;
    }
    PyObject *previous = accepted_item_type;
    accepted_item_type = Py_NewRef(cls);
    Py_XDECREF(previous);
    return 0;
}

/* The dealloc of a class defined in Python on tuple, from one made here. */
static int find_python_tuple_dealloc(void) {
    PyObject *probe = PyObject_CallFunction((PyObject *)&PyType_Type, "s(O){s:()}", "ItemProbe",
                                            (PyObject *)&PyTuple_Type, "__slots__");
    if (probe == NULL)
        return -1;
    python_tuple_dealloc = (destructor)PyType_GetSlot((PyTypeObject *)probe, Py_tp_dealloc);
    Py_DECREF(probe);
    return python_tuple_dealloc == NULL ? -1 : 0;
}

int items_add_types(PyObject *module) {
    if (find_python_tuple_dealloc() < 0)
        return -1;
    return add_type(module, &item_iter_spec, "ItemIter", &item_iter_type);
}

/* Each record's file index as an int and its prefix, names[file], made and looked up once per
 * stretch of records of one file and held in self->held.  -1 with the lookup's error. */
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
            int appended = prefix == NULL ? -1 : PyList_Append(held, key);
            Py_DECREF(key); /* `held` keeps them */
            if (appended < 0 || PyList_Append(held, prefix) < 0) {
                Py_XDECREF(prefix);
                goto fail;
            }
            Py_DECREF(prefix);
        }
        self->named[2 * k] = key;
        self->named[2 * k + 1] = prefix;
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
    if (check_item_type(cls, "iter_items") < 0)
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(item_iter_type, Py_tp_alloc);
    ItemIter *self = (ItemIter *)alloc(item_iter_type, 0);
    if (self == NULL)
        return NULL;
    /* alloc zeroed the fields: a failure below deallocates what was set. */
    self->n = PyList_Size(records);
    self->cls = Py_NewRef(cls);
    self->epoch = Py_NewRef(epoch);
    self->alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)cls, Py_tp_alloc);
    size_t slots = (size_t)(self->n > 0 ? self->n : 1);
    self->columns = PyMem_Malloc(3 * slots * sizeof(int64_t));
    self->named = PyMem_Malloc(2 * slots * sizeof(PyObject *));
    if (self->columns == NULL || self->named == NULL) {
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
