/* libFuzzer target: the frame scan, frame packing and CRC32C kernels over arbitrary bytes
 * (specs/native.md §6).
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
    pack_frames(data, off, lengths, r.count, packed);
    for (size_t i = 0, into = 0; i < r.count; into += (size_t)lengths[i], i++)
        if (memcmp(packed + into, data + starts[i] + 12, (size_t)lengths[i]) != 0)
            abort();
    free(packed);
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
