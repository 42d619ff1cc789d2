/* libFuzzer target: the frame scan, frame packing and CRC32C kernels over arbitrary bytes
 * (specs/native.md §6): scan_frames(), scan_window() and copy_frames() agree.
 *
 * The first two bytes choose the scan's parameters; the rest is the buffer, copied into an
 * allocation of exactly its size so that AddressSanitizer sees any read past its end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "frames.h"

static const uint64_t caps[4] = {UINT64_MAX, 2147483647u, 300, 0};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    crc32c_init();
    return 0;
}

/* The scan without data CRCs, then copy_frames() checking them (with `verify`) as it copies
 * (scan_pack's way): the same frames and stop as the scan `r`. */
static void check_unverified_copy(const unsigned char *data, size_t n, size_t off, size_t limit,
                                  uint64_t max_length, int verify, size_t capacity,
                                  scan_result r) {
    int64_t *starts = malloc(capacity * sizeof *starts), *lengths = malloc(capacity * sizeof *lengths);
    scan_result h = scan_frames(data, n, off, limit, max_length, 0, starts, lengths, capacity);
    size_t total = 0;
    for (size_t i = 0; i < h.count; i++)
        total += (size_t)lengths[i];
    unsigned char *packed = malloc(total ? total : 1);
    size_t copied = copy_frames(data, off, lengths, h.count, verify, packed);
    if (copied < h.count) {
        h.end = (size_t)starts[copied];
        h.stop = SCAN_DATA_CRC;
        h.count = copied;
    }
    if (h.count != r.count || h.end != r.end || h.stop != r.stop)
        abort();
    free(packed);
    free(lengths);
    free(starts);
}

/* scan_window() from `off`, window after window of at most 5 frames and 300 bytes (the length
 * CRC carried from one to the next), finds the frames and the stop of the scan `r` when it
 * verifies (a verifying scan, so that the windows' three-at-a-time CRCs are compared). */
static void check_windows(const unsigned char *data, size_t n, size_t off, size_t limit,
                          uint64_t max_length, int verify, scan_result r, const int64_t *starts,
                          const int64_t *lengths) {
    length_crcs known = {0, 0, 0};
    int64_t ws[5], wl[5];
    size_t found = 0, at = off;
    int stop = SCAN_LIMIT;
    while (found < limit) {
        size_t most = limit - found < 5 ? limit - found : 5;
        scan_result w = scan_window(data, n, at, most, 300, max_length, verify, &known, ws, wl);
        for (size_t i = 0; i < w.count; i++, found++)
            if (found >= r.count || ws[i] != starts[found] || wl[i] != lengths[found])
                abort();
        at = w.end;
        stop = w.stop;
        if (w.stop != SCAN_LIMIT || w.count == 0)
            break;
    }
    if (found != r.count || at != r.end || stop != r.stop)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    if (size < 2)
        return 0;
    size_t off = input[0] & 31;
    int verify = input[1] & 1;
    size_t limit = (input[1] & 2) ? 3 : SIZE_MAX;
    uint64_t max_length = caps[(input[1] >> 2) & 3];
    size_t n = size - 2;
    unsigned char *data = malloc(n ? n : 1);
    memcpy(data, input + 2, n);

    size_t capacity = n / 16 + 1;
    int64_t *starts = malloc(capacity * sizeof *starts), *lengths = malloc(capacity * sizeof *lengths);
    scan_result r = scan_frames(data, n, off, limit, max_length, verify, starts, lengths, capacity);
    if (r.count > capacity || r.stop < 0 || r.stop > 4)
        abort();
    size_t at = off;
    for (size_t i = 0; i < r.count; i++) {
        /* Every frame found starts where the previous one ended and lies inside the buffer. */
        if ((size_t)starts[i] != at || (uint64_t)lengths[i] > max_length ||
            (size_t)lengths[i] > n - at - 16)
            abort();
        at += (size_t)lengths[i] + 16;
    }
    if (r.end != at)
        abort();
    /* The frames' data packed back to back, into an allocation of exactly their total. */
    size_t total = 0;
    for (size_t i = 0; i < r.count; i++)
        total += (size_t)lengths[i];
    unsigned char *packed = malloc(total ? total : 1);
    if (copy_frames(data, off, lengths, r.count, verify, packed) != r.count)
        abort();
    for (size_t i = 0, into = 0; i < r.count; into += (size_t)lengths[i], i++)
        if (memcmp(packed + into, data + starts[i] + 12, (size_t)lengths[i]) != 0)
            abort();
    free(packed);
    check_unverified_copy(data, n, off, limit, max_length, verify, capacity, r);
    check_windows(data, n, off, limit, max_length, verify, r, starts, lengths);
    if (crc32c_update(0, data, n) != crc32c_table_update(0, data, n))
        abort();
    if (n > 3 && crc32c_update(7, data + 3, n - 3) != crc32c_table_update(7, data + 3, n - 3))
        abort();
    /* The CRC computed while copying is the table walk's, and the copy is exact. */
    unsigned char *copy = malloc(n ? n : 1);
    if (crc32c_copy(copy, data, n) != crc32c_table_update(0, data, n) || memcmp(copy, data, n))
        abort();
    free(copy);
    free(lengths);
    free(starts);
    free(data);
    return 0;
}
