/* Item, the type of every delivered record (specs/native.md, "Item").
 *
 * A reader makes millions of items per second and most are read once: the four positions are
 * held as int64 and become ints only when read, the tfds_id is formatted only when asked for,
 * an item whose record is bytes is left out of the cycle collector (it can refer to nothing
 * that refers back), as CPython does for tuples of atomic values, and freed items are reused. */
#include "item_type_py.h"

#include "module_types.h"

typedef struct {
    PyObject_HEAD
    PyObject *record;
    PyObject *prefix; /* the tfds_id before "__<record_index>": an exact str */
    int64_t epoch, position, file_index, record_index;
} ItemObject;

static PyTypeObject *item_type;

/* Freed items kept for the next ones, as CPython keeps freed tuples: a reader frees each item
 * about when it makes the next, and taking one from here skips the allocator, the zeroing of
 * the memory and the collector's count of new objects (a collection every 700 items).  The
 * GIL guards the list; an item in it is untracked and holds no reference.  Under
 * AddressSanitizer every item is freed, so that a use after free is caught. */
#if defined(__SANITIZE_ADDRESS__)
#define FREE_ITEMS 0
#else
#define FREE_ITEMS 256
#endif
static ItemObject *free_items[FREE_ITEMS > 0 ? FREE_ITEMS : 1];
static int n_free;

static ItemObject *item_alloc(void) {
    if (n_free == 0)
        return PyObject_GC_New(ItemObject, item_type);
    ItemObject *item = free_items[--n_free];
    PyObject_Init((PyObject *)item, item_type);
    return item;
}

PyObject *item_new(PyObject *record, PyObject *prefix, int64_t epoch, int64_t position,
                   int64_t file_index, int64_t record_index) {
    if (record == NULL)
        return NULL;
    ItemObject *item = item_alloc();
    if (item == NULL) {
        Py_DECREF(record);
        return NULL;
    }
    item->record = record;
    item->prefix = Py_NewRef(prefix);
    item->epoch = epoch;
    item->position = position;
    item->file_index = file_index;
    item->record_index = record_index;
    /* Made untracked; an item of bytes can refer to nothing that refers back to it. */
    if (!PyBytes_CheckExact(record))
        PyObject_GC_Track((PyObject *)item);
    return (PyObject *)item;
}

int item_check_type(PyObject *cls, const char *who) {
    if (cls == (PyObject *)item_type)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: cls must be readplan's compiled Item "
                 "(readplan.records._core.Item), got %R", who, cls);
    return -1;
}

PyObject *item_prefix_error(const char *who, int64_t file, PyObject *prefix) {
    return PyErr_Format(PyExc_TypeError, "%s: names[%lld] must be a str (the file's tfds_id "
                        "prefix), got %R", who, (long long)file, prefix);
}

/* 1 when value is an int that is not a bool, and in 0 .. 2**63 - 1 (*out set); 0 when not;
 * -1 with an error set. */
static int non_negative_int64(PyObject *value, int64_t *out) {
    if (!PyLong_Check(value) || PyBool_Check(value))
        return 0;
    int overflow = 0;
    long long got = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (got == -1 && PyErr_Occurred())
        return -1;
    if (overflow != 0 || got < 0)
        return 0;
    *out = (int64_t)got;
    return 1;
}

int item_int64_of(PyObject *value, const char *who, int64_t *out) {
    int fits = non_negative_int64(value, out);
    if (fits == 0)
        PyErr_Format(PyExc_ValueError, "%s must be a non-negative int below 2**63, got %R", who,
                     value);
    return fits == 1 ? 0 : -1;
}

/* Raises readplan.errors.ConfigError(message, field=field, value=value); always NULL. */
static PyObject *config_error(PyObject *message, const char *field, PyObject *value) {
    if (message == NULL)
        return NULL;
    PyObject *errors = PyImport_ImportModule("readplan.errors");
    PyObject *cls = errors == NULL ? NULL : PyObject_GetAttrString(errors, "ConfigError");
    PyObject *args = cls == NULL ? NULL : PyTuple_Pack(1, message);
    PyObject *kwargs = args == NULL ? NULL : Py_BuildValue("{s:s,s:O}", "field", field, "value",
                                                           value);
    PyObject *error = kwargs == NULL ? NULL : PyObject_Call(cls, args, kwargs);
    if (error != NULL)
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
    Py_XDECREF(error);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(cls);
    Py_XDECREF(errors);
    Py_DECREF(message);
    return NULL;
}

/* The prefix of tfds_id when it is a str ending in "__<record_index>": a new reference, or
 * NULL with the ConfigError set. */
static PyObject *prefix_of(PyObject *tfds_id, int64_t record_index) {
    PyObject *suffix = PyUnicode_FromFormat("__%lld", (long long)record_index);
    if (suffix == NULL)
        return NULL;
    Py_ssize_t ends = PyUnicode_Check(tfds_id) ? PyUnicode_Tailmatch(tfds_id, suffix, 0,
                                                                      PY_SSIZE_T_MAX, 1)
                                               : 0;
    PyObject *prefix = NULL;
    if (ends == 1) {
        Py_ssize_t keep = PyUnicode_GetLength(tfds_id) - PyUnicode_GetLength(suffix);
        prefix = PyUnicode_Substring(tfds_id, 0, keep);
    } else if (ends == 0) {
        config_error(PyUnicode_FromFormat("Item.tfds_id must be TFDS's '<file>%U' for "
                                          "record_index %lld, got %R", suffix,
                                          (long long)record_index, tfds_id),
                     "tfds_id", tfds_id);
    }
    Py_DECREF(suffix);
    return prefix;
}

static PyObject *item_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"record", "tfds_id", "epoch", "position", "file_index",
                               "record_index", NULL};
    static const char *names[] = {"epoch", "position", "file_index", "record_index"};
    PyObject *record, *tfds_id, *ints[4];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO:Item", keywords, &record, &tfds_id,
                                     &ints[0], &ints[1], &ints[2], &ints[3]))
        return NULL;
    int64_t values[4];
    for (int j = 0; j < 4; j++) {
        int fits = non_negative_int64(ints[j], &values[j]);
        if (fits < 0)
            return NULL;
        if (fits == 0)
            return config_error(PyUnicode_FromFormat("Item.%s must be a non-negative int below "
                                                     "2**63, got %R", names[j], ints[j]),
                                names[j], ints[j]);
    }
    PyObject *prefix = prefix_of(tfds_id, values[3]);
    if (prefix == NULL)
        return NULL;
    PyObject *item = item_new(Py_NewRef(record), prefix, values[0], values[1], values[2],
                              values[3]);
    Py_DECREF(prefix);
    return item;
}

static int item_traverse(ItemObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->record);
    Py_VISIT(Py_TYPE((PyObject *)self));
    return 0;
}

static int item_clear(ItemObject *self) {
    Py_CLEAR(self->record);
    return 0;
}

static void item_dealloc(ItemObject *self) {
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    if (PyObject_GC_IsTracked((PyObject *)self))
        PyObject_GC_UnTrack((PyObject *)self);
    Py_XDECREF(self->record);
    Py_XDECREF(self->prefix);
    if (n_free < FREE_ITEMS)
        free_items[n_free++] = self;
    else
        PyObject_GC_Del(self);
    Py_DECREF((PyObject *)type);
}

/* The fields in the order the twin compares and hashes them. */
static PyObject *key_of(ItemObject *self) {
    return Py_BuildValue("(OLLLLO)", self->record ? self->record : Py_None,
                         (long long)self->epoch, (long long)self->position,
                         (long long)self->file_index, (long long)self->record_index,
                         self->prefix);
}

static PyObject *item_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != item_type || Py_TYPE(b) != item_type)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *left = key_of((ItemObject *)a), *right = left ? key_of((ItemObject *)b) : NULL;
    PyObject *result = right == NULL ? NULL : PyObject_RichCompare(left, right, op);
    Py_XDECREF(left);
    Py_XDECREF(right);
    return result;
}

static Py_hash_t item_hash(ItemObject *self) {
    PyObject *key = key_of(self);
    Py_hash_t hash = key == NULL ? -1 : PyObject_Hash(key);
    Py_XDECREF(key);
    return hash;
}

static PyObject *tfds_id_of(ItemObject *self) {
    return PyUnicode_FromFormat("%U__%lld", self->prefix, (long long)self->record_index);
}

static PyObject *item_repr(ItemObject *self) {
    PyObject *full = PyObject_Repr(self->record ? self->record : Py_None);
    PyObject *shown = full == NULL ? NULL
                                   : PyUnicode_Substring(full, 0, 60);
    PyObject *tfds_id = shown == NULL ? NULL : tfds_id_of(self);
    PyObject *repr = tfds_id == NULL ? NULL : PyUnicode_FromFormat(
        "Item(record=%U, tfds_id=%R, epoch=%lld, position=%lld, file_index=%lld, "
        "record_index=%lld)", shown, tfds_id, (long long)self->epoch,
        (long long)self->position, (long long)self->file_index, (long long)self->record_index);
    Py_XDECREF(tfds_id);
    Py_XDECREF(shown);
    Py_XDECREF(full);
    return repr;
}

/* Pickled by name as readplan.reading.items.Item, whichever class that name holds in the
 * process that pickles (the pure core's twin there), as the twin pickles. */
static PyObject *item_reduce(ItemObject *self, PyObject *unused) {
    PyObject *items = PyImport_ImportModule("readplan.reading.items");
    PyObject *cls = items == NULL ? NULL : PyObject_GetAttrString(items, "Item");
    PyObject *tfds_id = cls == NULL ? NULL : tfds_id_of(self);
    PyObject *reduced = tfds_id == NULL ? NULL : Py_BuildValue(
        "O(OOLLLL)", cls, self->record ? self->record : Py_None, tfds_id,
        (long long)self->epoch, (long long)self->position, (long long)self->file_index,
        (long long)self->record_index);
    Py_XDECREF(tfds_id);
    Py_XDECREF(cls);
    Py_XDECREF(items);
    return reduced;
}

static PyObject *get_record(ItemObject *self, void *unused) {
    return Py_NewRef(self->record ? self->record : Py_None);
}
static PyObject *get_tfds_id(ItemObject *self, void *unused) { return tfds_id_of(self); }
static PyObject *get_epoch(ItemObject *self, void *unused) {
    return PyLong_FromLongLong(self->epoch);
}
static PyObject *get_position(ItemObject *self, void *unused) {
    return PyLong_FromLongLong(self->position);
}
static PyObject *get_file_index(ItemObject *self, void *unused) {
    return PyLong_FromLongLong(self->file_index);
}
static PyObject *get_record_index(ItemObject *self, void *unused) {
    return PyLong_FromLongLong(self->record_index);
}

static PyGetSetDef item_getset[] = {
    {"record", (getter)get_record, NULL, "The raw bytes, or the decoded features.", NULL},
    {"tfds_id", (getter)get_tfds_id, NULL, "TFDS's id of the record, {file}__{index}.", NULL},
    {"epoch", (getter)get_epoch, NULL, "The epoch of the plan it was delivered in.", NULL},
    {"position", (getter)get_position, NULL, "Its position in the epoch's global order.", NULL},
    {"file_index", (getter)get_file_index, NULL, "Its file, an index of plan.instructions.", NULL},
    {"record_index", (getter)get_record_index, NULL, "Its index in the file.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef item_methods[] = {
    {"__reduce__", (PyCFunction)item_reduce, METH_NOARGS, "Pickles as Item(...) of its fields."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot item_slots[] = {
    {Py_tp_new, item_tp_new},
    {Py_tp_dealloc, item_dealloc},
    {Py_tp_traverse, item_traverse},
    {Py_tp_clear, item_clear},
    {Py_tp_richcompare, item_richcompare},
    {Py_tp_hash, item_hash},
    {Py_tp_repr, item_repr},
    {Py_tp_getset, item_getset},
    {Py_tp_methods, item_methods},
    {Py_tp_doc, "Item(record, tfds_id, epoch, position, file_index, record_index): one delivered "
                "record and where it sits in the plan (specs/reader.md, \"Deliveries\")."},
    {0, NULL},
};

/* Named where the reader's Item lives, so that pickles name one class under either core. */
static PyType_Spec item_spec = {
    "readplan.reading.items.Item",
    sizeof(ItemObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    item_slots,
};

int item_type_add(PyObject *module) {
    return add_type(module, &item_spec, "Item", &item_type);
}
