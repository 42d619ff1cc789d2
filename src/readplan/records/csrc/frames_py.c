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
 * the frames found are verified in the read buffer, then their data is copied while it is still
 * in the processor's cache into a bytearray of exactly their size (never more than the buffer
 * holds), and offsets[k + 1 .. k + count] get offsets[k] plus the running sum of their lengths.
 * The lengths are kept in memory of our own between the scan and the copy: the caller's arrays
 * may change while the GIL is released. */
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
    r = scan_frames(data.buf, (size_t)data.len, (size_t)off, most, max_length, verify, starts,
                    lengths, capacity);
    Py_END_ALLOW_THREADS
    /* Every frame lies in the data, so their total is at most data.len. */
    Py_ssize_t total = 0;
    for (size_t i = 0; i < r.count; i++)
        total += (Py_ssize_t)lengths[i];
    if (base > INT64_MAX - (int64_t)total) {
        PyErr_Format(PyExc_ValueError, "scan_pack: offsets[%zd] + %zd bytes pass 2**63 - 1", k,
                     total);
        goto done;
    }
    if (r.count == 0) {
        values = Py_None;
        Py_INCREF(values);
    } else {
        values = PyByteArray_FromStringAndSize(NULL, total);
        if (values == NULL)
            goto done;
        unsigned char *into = (unsigned char *)PyByteArray_AsString(values);
        Py_BEGIN_ALLOW_THREADS
        pack_frames(data.buf, (size_t)off, lengths, r.count, into);
        Py_END_ALLOW_THREADS
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

/* read_frame_data(fd, offset, length, tail, verify): a large frame's data read straight into the
 * storage of the bytes object that becomes the record, and the `tail` bytes after it (its data
 * CRC and the next header) in the same system call; with `verify` its CRC32C is computed at once,
 * while the data is in the processor's cache.  None when the file ends first.  Nothing is
 * allocated before the file's size shows that `length` bytes are there to read. */
PyObject *py_read_frame_data(PyObject *self, PyObject *args) {
    int fd, verify;
    long long offset;
    Py_ssize_t length, tail_size;
    if (!PyArg_ParseTuple(args, "iLnnp:read_frame_data", &fd, &offset, &length, &tail_size,
                          &verify))
        return NULL;
    if (offset < 0 || length < 0 || tail_size < 0 || tail_size > MAX_TAIL)
        return PyErr_Format(PyExc_ValueError,
                            "read_frame_data: offset %lld and length %zd must be >= 0 and tail %zd "
                            "in [0, %d]",
                            offset, length, tail_size, MAX_TAIL);
#ifdef _WIN32
    return PyErr_Format(PyExc_OSError, "read_frame_data: no positioned reads on this system");
#else
    struct stat st;
    if (fstat(fd, &st) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (offset > (long long)st.st_size || length > (long long)st.st_size - offset)
        Py_RETURN_NONE;
    PyObject *data = PyBytes_FromStringAndSize(NULL, length);
    if (data == NULL)
        return NULL;
    unsigned char tail[MAX_TAIL];
    unsigned char *into = (unsigned char *)PyBytes_AsString(data);
    struct iovec iov[2] = {{into, (size_t)length}, {tail, (size_t)tail_size}};
    ssize_t got;
    uint32_t crc = 0;
    int saved = 0;
    Py_BEGIN_ALLOW_THREADS
    got = read_fully(fd, iov, 2, (off_t)offset);
    saved = errno;
    if (verify && got >= length)
        crc = crc32c_update(0, into, (size_t)length);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        Py_DECREF(data);
        errno = saved;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (got < length) {
        Py_DECREF(data);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(Ny#k)", data, (const char *)tail, (Py_ssize_t)(got - length),
                         (unsigned long)crc);
#endif
}
