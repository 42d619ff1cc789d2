/* libFuzzer target: the check of chosen frames in a span (check_frames, specs/native.md §6),
 * and where a read's frames begin and end and its spans split (span_bounds).
 *
 * The first byte chooses the parameters and the number of spans; then come the spans, each a
 * begin and an end of two bytes (so that they fall inside, across and outside the buffer); the
 * rest is the buffer, copied into an allocation of exactly its size so that AddressSanitizer
 * sees any read past its end.  Every verdict is checked against a plain recomputation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "spans.h"

static const uint64_t caps[4] = {UINT64_MAX, 2147483647u, 300, 0};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    crc32c_init();
    return 0;
}

static uint32_t plain_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether frame [b, e) of data passes every check, recomputed with the table CRC. */
static int sound(const unsigned char *data, int64_t b, int64_t e, int headers, uint64_t cap) {
    if (e - b < 16 || (uint64_t)(e - b - 16) > cap)
        return 0;
    uint64_t length = (uint64_t)(e - b - 16);
    if (headers) {
        uint64_t stored = 0;
        for (int k = 7; k >= 0; k--)
            stored = stored << 8 | data[b + k];
        if (stored != length || plain_le32(data + b + 8) != crc32c_mask(crc32c_table_update(0, data + b, 8)))
            return 0;
    }
    return plain_le32(data + e - 4) == crc32c_mask(crc32c_table_update(0, data + b + 12, (size_t)length));
}

/* span_bounds over the fuzzed offsets taken as bounds and indices, in allocations of exactly
 * their size, against a plain recomputation. */
static void check_span_bounds(const int64_t *bounds, const int64_t *indices, size_t n,
                              int64_t max_gap, int64_t max_skip) {
    size_t room = n ? n : 1;
    int64_t *begins = malloc(room * sizeof *begins), *ends = malloc(room * sizeof *ends);
    int64_t *gaps = malloc(room * sizeof *gaps);
    size_t count = SIZE_MAX, bad = SIZE_MAX;
    int status = span_bounds(bounds, n, indices, n, max_gap, max_skip, begins, ends, gaps, &count,
                             &bad);
    size_t outside = SIZE_MAX;
    for (size_t i = 0; i < n && outside == SIZE_MAX; i++)
        if (indices[i] < 0 || (uint64_t)indices[i] + 1 >= n)
            outside = i;
    if (outside != SIZE_MAX) {
        if (status != 1 || bad != outside)
            abort();
    } else {
        size_t expected = 0;
        for (size_t i = 0; i < n; i++) {
            if (begins[i] != bounds[indices[i]] || ends[i] != bounds[indices[i] + 1])
                abort();
            if (i == 0)
                continue;
            uint64_t skip = (uint64_t)bounds[indices[i]] - (uint64_t)bounds[indices[i - 1] + 1];
            int apart = indices[i] - indices[i - 1] > max_gap ||
                        (max_skip >= 0 && (int64_t)skip > max_skip);
            if (apart && (expected >= count || gaps[expected++] != (int64_t)i))
                abort();
        }
        if (status != 0 || count != expected)
            abort();
    }
    free(gaps);
    free(ends);
    free(begins);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    if (size < 1)
        return 0;
    int headers = input[0] & 1;
    uint64_t cap = caps[(input[0] >> 1) & 3];
    size_t n = (size_t)(input[0] >> 3);
    if (size < 1 + 4 * n)
        n = (size - 1) / 4;
    int64_t *begins = malloc((n ? n : 1) * sizeof *begins), *ends = malloc((n ? n : 1) * sizeof *ends);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = input + 1 + 4 * i;
        /* Mostly small offsets, a few past any buffer or negative. */
        begins[i] = (int16_t)(p[0] | p[1] << 8);
        ends[i] = (int16_t)(p[2] | p[3] << 8);
    }
    size_t length = size - 1 - 4 * n;
    unsigned char *data = malloc(length ? length : 1);
    memcpy(data, input + 1 + 4 * n, length);

    size_t bad = SIZE_MAX;
    int found = check_frames(data, length, begins, ends, n, headers, cap, NULL, &bad);
    /* Checked on copies in rooms of exactly each payload's size (short payloads copied first,
     * as cut_frames_into does; long ones copied by check_frames): the same verdict, and the
     * copies are the payloads. */
    unsigned char **outs = calloc(n ? n : 1, sizeof *outs);
    for (size_t i = 0; i < n; i++) {
        /* No room for a frame the kernel's caller gives none (outside data, over the cap):
         * check_frames must never write there. */
        if (begins[i] < 0 || ends[i] - begins[i] < 16 || (uint64_t)ends[i] > length ||
            (uint64_t)(ends[i] - begins[i] - 16) > cap)
            continue;
        size_t payload = (size_t)(ends[i] - begins[i] - 16);
        outs[i] = malloc(payload ? payload : 1);
        if (payload < COPY_CHECKED)
            memcpy(outs[i], data + begins[i] + 12, payload);
    }
    size_t copy_bad = SIZE_MAX;
    if (check_frames(data, length, begins, ends, n, headers, cap, outs, &copy_bad) != found ||
        copy_bad != bad)
        abort();
    for (size_t i = 0; found == FRAMES_SOUND && i < n; i++)
        if (memcmp(outs[i], data + begins[i] + 12, (size_t)(ends[i] - begins[i] - 16)) != 0)
            abort();
    for (size_t i = 0; i < n; i++)
        free(outs[i]);
    free(outs);
    size_t outside = SIZE_MAX;
    for (size_t i = 0; i < n && outside == SIZE_MAX; i++)
        if (begins[i] < 0 || ends[i] < begins[i] || (uint64_t)ends[i] > length)
            outside = i;
    if (outside != SIZE_MAX) {
        if (found != FRAMES_OUTSIDE || bad != outside)
            abort();
    } else {
        size_t first_bad = SIZE_MAX;
        for (size_t i = 0; i < n && first_bad == SIZE_MAX; i++)
            if (!sound(data, begins[i], ends[i], headers, cap))
                first_bad = i;
        if (first_bad == SIZE_MAX ? found != FRAMES_SOUND
                                  : found != FRAMES_DAMAGED || bad != first_bad)
            abort();
    }
    check_span_bounds(begins, ends, n, (int64_t)(input[0] >> 3) - 8, (int64_t)(input[0] & 7) * 40 - 1);
    free(data);
    free(ends);
    free(begins);
    return 0;
}
