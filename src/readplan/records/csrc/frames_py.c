/* The frame kernels' Python functions that pack frames or read them from a file
 * (specs/native.md §3).  As in core.c, the Python layer words every error a file's bytes cause. */
#include "frames_py.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "frames.h"

#ifndef _WIN32
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#endif

/* scan_frames() and the packing of the frames' data in one call, for one batch of packed records:
 * the frames lying complete in the read buffer with sound headers are found first, then their data
 * is copied into a bytearray of their size (never more than the buffer holds) while each one's CRC
 * is computed (copy_frames(): the bytes delivered are the bytes checked, even if another thread
 * writes a shared buffer meanwhile); a frame whose data CRC fails ends the batch there, and the
 * bytearray is cut to the frames before it.  offsets[k + 1 .. k + count] get offsets[k] plus the
 * running sum of their lengths.  The lengths are kept in memory of our own between the scan and
 * the copy: the caller's arrays may change while the GIL is released. */
PyObject *py_scan_pack(PyObject *self, PyObject *args) {
    PyObject *data_obj, *max_obj, *offsets_obj;
    Py_ssize_t off, limit, k;
    unsigned long long max_length;
    int verify;
    if (!PyArg_ParseTuple(args, "OnnOpOn:scan_pack", &data_obj, &off, &limit, &max_obj, &verify,
                          &offsets_obj, &k))
        return NULL;
    if (off < 0)
        return PyErr_Format(PyExc_ValueError, "scan_pack: off must be >= 0, got %zd", off);
    if (max_length_of(max_obj, &max_length, "scan_pack") < 0)
        return NULL;
    Py_buffer data, offsets;
    if (borrow_bytes(data_obj, &data, "scan_pack: data") < 0)
        return NULL;
    if (borrow_int64(offsets_obj, &offsets, 1, "scan_pack: offsets") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    PyObject *values = NULL, *result = NULL;
    int64_t *starts = NULL;
    Py_ssize_t slots = items_of(&offsets);
    int64_t *out = offsets.buf;
    if (k < 0 || k >= slots) {
        PyErr_Format(PyExc_ValueError, "scan_pack: k must be in [0, %zd), got %zd", slots, k);
        goto done;
    }
    int64_t base = out[k];
    if (base < 0) {
        PyErr_Format(PyExc_ValueError, "scan_pack: offsets[%zd] must be >= 0, got %lld", k,
                     (long long)base);
        goto done;
    }
    size_t room = (size_t)(slots - 1 - k);
    size_t most = limit < 0 || (size_t)limit > room ? room : (size_t)limit;
    /* No more frames than 16-byte pieces of the buffer: the scratch is bounded by the data. */
    size_t capacity = (size_t)data.len / 16 + 1;
    if (capacity > most)
        capacity = most;
    starts = PyMem_Malloc(2 * (capacity ? capacity : 1) * sizeof *starts);
    if (starts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *lengths = starts + capacity;
    scan_result r;
    Py_BEGIN_ALLOW_THREADS
    r = scan_frames(data.buf, (size_t)data.len, (size_t)off, most, max_length, 0, starts, lengths,
                    capacity);
    Py_END_ALLOW_THREADS
    /* Every frame lies in the data, so their total is at most data.len. */
    Py_ssize_t total = 0;
    for (size_t i = 0; i < r.count; i++)
        total += (Py_ssize_t)lengths[i];
    if (r.count > 0) {
        values = PyByteArray_FromStringAndSize(NULL, total);
        if (values == NULL)
            goto done;
        unsigned char *into = (unsigned char *)PyByteArray_AsString(values);
        size_t copied;
        Py_BEGIN_ALLOW_THREADS
        copied = copy_frames(data.buf, (size_t)off, lengths, r.count, verify, into);
        Py_END_ALLOW_THREADS
        if (copied < r.count) {
            r.end = (size_t)starts[copied];
            r.stop = SCAN_DATA_CRC;
            r.count = copied;
            total = 0;
            for (size_t i = 0; i < copied; i++)
                total += (Py_ssize_t)lengths[i];
            if (copied == 0)
                Py_CLEAR(values);
            else if (PyByteArray_Resize(values, total) < 0)
                goto done;
        }
    }
    if (base > INT64_MAX - (int64_t)total) {
        PyErr_Format(PyExc_ValueError, "scan_pack: offsets[%zd] + %zd bytes pass 2**63 - 1", k,
                     total);
        goto done;
    }
    if (values == NULL) {
        values = Py_None;
        Py_INCREF(values);
    } else {
        for (size_t i = 0; i < r.count; i++) {
            base += lengths[i];
            out[k + 1 + (Py_ssize_t)i] = base;
        }
    }
    result = Py_BuildValue("(Onni)", values, (Py_ssize_t)r.count, (Py_ssize_t)r.end, r.stop);
done:
    Py_XDECREF(values);
    PyMem_Free(starts);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    return result;
}

/* The longest tail read after a frame's data: its data CRC and the next frame's header. */
#define MAX_TAIL 16

#ifndef _WIN32
/* Reads into the iovecs from `offset` until they are full or the file ends; -1 on an error. */
static ssize_t read_fully(int fd, struct iovec *iov, int count, off_t offset) {
    ssize_t total = 0;
    while (count > 0) {
        ssize_t got = preadv(fd, iov, count, offset + total);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? -1 : total;
        total += got;
        while (count > 0 && (size_t)got >= iov->iov_len) {
            got -= (ssize_t)iov->iov_len;
            iov++;
            count--;
        }
        if (count > 0) {
            iov->iov_base = (char *)iov->iov_base + got;
            iov->iov_len -= (size_t)got;
        }
    }
    return total;
}
#endif

/* read_large_frames(fd, head, pos, end, max_length, verify, limit, budget, least, /): consecutive
 * large frames from file offset `pos` (whose first bytes are `head`), each with one positioned
 * vectored read: its data straight into its bytes object, its CRC and the next header with it,
 * the data's CRC32C computed at once, while it is in the processor's cache.  The loop stops before the first frame that is not a sound frame of
 * `least` to max_length bytes lying whole before `end`, after `limit` frames (-1: no limit), or
 * once `budget` bytes were read.  Nothing is allocated before the file's size (by fstat) and `end`
 * show that a frame's data is there to read.  Returns (records, pos after them, the bytes read after the
 * last one's data: its CRC and what follows of the next header). */
PyObject *py_read_large_frames(PyObject *self, PyObject *args) {
    int fd, verify;
    long long pos, end;
    PyObject *max_obj;
    Py_ssize_t limit, budget, least;
    Py_buffer head;
    unsigned long long max_length;
    if (!PyArg_ParseTuple(args, "iy*LLOpnnn:read_large_frames", &fd, &head, &pos, &end, &max_obj,
                          &verify, &limit, &budget, &least))
        return NULL;
    if (max_length_of(max_obj, &max_length, "read_large_frames") < 0) {
        PyBuffer_Release(&head);
        return NULL;
    }
    if (pos < 0 || end < pos || least < 0) {
        PyBuffer_Release(&head);
        return PyErr_Format(PyExc_ValueError,
                            "read_large_frames: need 0 <= pos <= end and least >= 0, got pos %lld, "
                            "end %lld, least %zd",
                            pos, end, least);
    }
#ifdef _WIN32
    PyBuffer_Release(&head);
    return PyErr_Format(PyExc_OSError, "read_large_frames: no positioned reads on this system");
#else
    unsigned char cur[MAX_TAIL];
    size_t have = head.len < 12 ? (size_t)head.len : 12;
    memcpy(cur, head.buf, have);
    PyBuffer_Release(&head);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    /* Frames must lie before `end` and inside the file as it is now: nothing is allocated for
     * data the file does not hold. */
    long long stop = end < (long long)st.st_size ? end : (long long)st.st_size;
    PyObject *records = PyList_New(0);
    unsigned char tail[MAX_TAIL];
    Py_ssize_t tail_len = 0, count = 0, size = 0;
    while (records != NULL && (limit < 0 || count < limit) && have >= 12 && size < budget) {
        uint64_t length = le64(cur);
        if (length < (uint64_t)least || length > max_length || stop - pos < 16 ||
            length > (uint64_t)(stop - pos - 16) ||
            crc32c_mask(crc32c_update(0, cur, 8)) != le32(cur + 8))
            break;
        long long after = pos + (long long)length + 16;
        Py_ssize_t want = end - after + 4 < MAX_TAIL ? (Py_ssize_t)(end - after + 4) : MAX_TAIL;
        PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length);
        if (data == NULL) {
            Py_CLEAR(records);
            break;
        }
        unsigned char *into = (unsigned char *)PyBytes_AsString(data);
        /* Read apart from `tail`, which must keep the last frame taken's bytes if this one is
         * not taken: the stream resumes from them. */
        unsigned char next[MAX_TAIL];
        struct iovec iov[2] = {{into, (size_t)length}, {next, (size_t)want}};
        ssize_t got;
        uint32_t crc = 0;
        int saved;
        Py_BEGIN_ALLOW_THREADS
        got = read_fully(fd, iov, 2, (off_t)(pos + 12));
        saved = errno;
        if (verify && got >= (ssize_t)length + 4)
            crc = crc32c_update(0, into, (size_t)length);
        Py_END_ALLOW_THREADS
        if (got < 0) {
            Py_DECREF(data);
            Py_CLEAR(records);
            errno = saved;
            PyErr_SetFromErrno(PyExc_OSError);
            break;
        }
        if (got < (ssize_t)length + 4 || (verify && crc32c_mask(crc) != le32(next))) {
            Py_DECREF(data);
            break;
        }
        int failed = PyList_Append(records, data) < 0;
        Py_DECREF(data);
        if (failed) {
            Py_CLEAR(records);
            break;
        }
        count++;
        size += (Py_ssize_t)length;
        pos = after;
        tail_len = (Py_ssize_t)(got - (ssize_t)length);
        memcpy(tail, next, (size_t)tail_len);
        have = (size_t)tail_len - 4;
        memcpy(cur, tail + 4, have);
    }
    if (records == NULL)
        return NULL;
    return Py_BuildValue("(NLy#)", records, pos, (const char *)tail, tail_len);
#endif
}
