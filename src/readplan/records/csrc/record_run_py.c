/* record_run(data, off, limit, max_length, verify): an iterator over the sound frames of data from
 * off, handing out each one's data as a new bytes object on next().
 *
 * The frames are checked a window at a time, in scan_frames()' order (scan_window(): a few dozen
 * frames or WINDOW_BYTES, their data CRCs three frames at a time), and each record is copied out
 * on next() while its window is still in the processor's cache.  Making one record per next()
 * instead of a list per buffer lets the consumer free each record before the next is made, so the
 * allocator hands the same memory, still in the cache, back for the next one.  The bytes checked
 * are the bytes copied only as long as nothing else writes the buffer: data must be a buffer of
 * the caller's own (a reader's private chunk), not shared with other threads.  The iterator holds
 * the buffer (a Py_buffer of data) until it stops; then it releases it, and `count`, `end` and
 * `stop` say how many records it gave, where the next frame starts and why it stopped (enum
 * scan_stop), as scan_frames() would.  While it runs, `stop` is -1. */
#include "record_run_py.h"

#include "frames.h"
#include "module_types.h"

#define RUNNING (-1)
/* A window: at most WINDOW frames, and frames are added to it until it holds WINDOW_BYTES. */
#define WINDOW 64
#define WINDOW_BYTES (16 << 10)

typedef struct {
    PyObject_HEAD
    Py_buffer data; /* held while stop == RUNNING */
    size_t at, count, limit;
    uint64_t max_length;
    int verify, stop;
    length_crcs known;
    size_t next, found; /* frames next .. found - 1 of the window are checked, not handed out */
    int window_stop;    /* why the window ended: SCAN_LIMIT when more may follow */
    int64_t starts[WINDOW], lengths[WINDOW];
} record_run;

static PyTypeObject *run_type;

static void finish(record_run *run, int stop) {
    if (run->stop == RUNNING)
        PyBuffer_Release(&run->data);
    run->stop = stop;
}

/* The next window from run->at: -1, or the stop code when it holds no frame. */
static int next_window(record_run *run) {
    size_t most = run->limit - run->count < WINDOW ? run->limit - run->count : WINDOW;
    scan_result r = scan_window(run->data.buf, (size_t)run->data.len, run->at, most, WINDOW_BYTES,
                                run->max_length, run->verify, &run->known, run->starts,
                                run->lengths);
    run->next = 0;
    run->found = r.count;
    run->window_stop = r.stop;
    return r.count ? -1 : r.stop;
}

/* The frame at run->at, whose header frame_header() found sound, copied out while its data CRC is
 * computed; NULL once the run stops at it. */
static PyObject *copied_record(record_run *run, uint64_t length) {
    PyObject *record = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length);
    if (record == NULL)
        return NULL;
    if (copy_frame(run->data.buf, run->at, length, run->verify,
                   (unsigned char *)PyBytes_AsString(record)) >= 0) {
        Py_DECREF(record);
        finish(run, SCAN_DATA_CRC);
        return NULL;
    }
    run->count++;
    run->at += (size_t)length + 16;
    return record;
}

static PyObject *run_next(PyObject *self) {
    record_run *run = (record_run *)self;
    if (run->stop != RUNNING)
        return NULL;
    if (run->next == run->found) {
        if (run->count >= run->limit || run->window_stop != SCAN_LIMIT) {
            finish(run, run->count >= run->limit ? SCAN_LIMIT : run->window_stop);
            return NULL;
        }
        uint64_t length;
        int stop = frame_header(run->data.buf, (size_t)run->data.len, run->at, run->max_length,
                                &run->known, &length);
        if (stop < 0 && length >= COPY_CHECKED)
            return copied_record(run, length);
        if (stop < 0)
            stop = next_window(run);
        if (stop >= 0) {
            finish(run, stop);
            return NULL;
        }
    }
    size_t i = run->next;
    PyObject *record = PyBytes_FromStringAndSize((const char *)run->data.buf + run->starts[i] + 12,
                                                 (Py_ssize_t)run->lengths[i]);
    if (record == NULL)
        return NULL;
    run->next++;
    run->count++;
    run->at = (size_t)(run->starts[i] + run->lengths[i] + 16);
    return record;
}

static void run_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    finish((record_run *)self, SCAN_LIMIT);
    freefunc free_slot = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_slot(self);
    Py_DECREF(type);
}

static PyObject *get_count(PyObject *self, void *closure) {
    return PyLong_FromSize_t(((record_run *)self)->count);
}

static PyObject *get_end(PyObject *self, void *closure) {
    return PyLong_FromSize_t(((record_run *)self)->at);
}

static PyObject *get_stop(PyObject *self, void *closure) {
    return PyLong_FromLong(((record_run *)self)->stop);
}

static PyGetSetDef run_getset[] = {
    {"count", get_count, NULL, "records handed out so far", NULL},
    {"end", get_end, NULL, "where the frame after the last one handed out starts", NULL},
    {"stop", get_stop, NULL, "-1 while running, then why the run stopped (scan stop codes)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot run_slots[] = {
    {Py_tp_iter, (void *)PyObject_SelfIter},
    {Py_tp_iternext, (void *)run_next},
    {Py_tp_dealloc, (void *)run_dealloc},
    {Py_tp_getset, run_getset},
    {Py_tp_doc, "The records of a buffer from an offset, one bytes object per next()."},
    {0, NULL},
};

static PyType_Spec run_spec = {
    "readplan.records._core.RecordRun", sizeof(record_run), 0, Py_TPFLAGS_DEFAULT, run_slots,
};

int record_run_init(PyObject *module) {
    return add_type(module, &run_spec, "RecordRun", &run_type);
}

PyObject *py_record_run(PyObject *self, PyObject *args) {
    PyObject *data_obj, *max_obj;
    Py_ssize_t off, limit;
    unsigned long long max_length;
    int verify;
    if (!PyArg_ParseTuple(args, "OnnOp:record_run", &data_obj, &off, &limit, &max_obj, &verify))
        return NULL;
    if (off < 0)
        return PyErr_Format(PyExc_ValueError, "record_run: off must be >= 0, got %zd", off);
    if (max_length_of(max_obj, &max_length, "record_run") < 0)
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(run_type, Py_tp_alloc);
    record_run *run = (record_run *)alloc(run_type, 0);
    if (run == NULL)
        return NULL;
    /* Not running until the buffer is held: dealloc then has nothing to release. */
    run->stop = SCAN_LIMIT;
    if (borrow_bytes(data_obj, &run->data, "record_run: data") < 0) {
        Py_DECREF(run);
        return NULL;
    }
    run->stop = RUNNING;
    run->at = (size_t)off;
    run->count = 0;
    run->limit = limit < 0 ? SIZE_MAX : (size_t)limit;
    run->max_length = max_length;
    run->verify = verify;
    run->known = (length_crcs){0, 0, 0};
    run->next = run->found = 0;
    run->window_stop = SCAN_LIMIT;
    return (PyObject *)run;
}
