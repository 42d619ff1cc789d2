#include "spans.h"

#include <string.h>

#include "crc32c.h"
#include "frames.h"

int check_frames(const unsigned char *data, size_t size, const int64_t *begins,
                 const int64_t *ends, size_t n, int headers, uint64_t max_length,
                 unsigned char *const *outs, size_t *bad) {
    /* Every span is checked to lie in the data before any frame is looked at: a caller's error
     * is reported as such, whatever damage the frames before it hold. */
    for (size_t i = 0; i < n; i++) {
        if (begins[i] < 0 || ends[i] < begins[i] || (uint64_t)ends[i] > size) {
            *bad = i;
            return FRAMES_OUTSIDE;
        }
    }
    /* Frames of one length share one length CRC: the last one computed is kept. */
    uint64_t known_length = 0;
    uint32_t known_crc = 0;
    int known = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *frame = data + begins[i];
        uint64_t span = (uint64_t)(ends[i] - begins[i]);
        if (span < 16 || span - 16 > max_length) {
            *bad = i;
            return FRAMES_DAMAGED;
        }
        uint64_t length = span - 16;
        if (headers) {
            if (le64(frame) != length) {
                *bad = i;
                return FRAMES_DAMAGED;
            }
            if (!known || known_length != length) {
                known_crc = crc32c_mask(crc32c_update(0, frame, 8));
                known_length = length;
                known = 1;
            }
            if (le32(frame + 8) != known_crc) {
                *bad = i;
                return FRAMES_DAMAGED;
            }
        }
        /* Checked on the copy: the bytes delivered are exactly the bytes checked, even if
         * another thread writes a shared buffer meanwhile. */
        int sound;
        if (outs != NULL && length >= COPY_CHECKED)
            sound = copy_frame(data, (size_t)begins[i], length, 1, outs[i]) < 0;
        else
            sound = crc32c_mask(crc32c_update(0, outs != NULL ? outs[i] : frame + 12,
                                              (size_t)length)) == le32(frame + 12 + length);
        if (!sound) {
            *bad = i;
            return FRAMES_DAMAGED;
        }
    }
    return FRAMES_SOUND;
}

/* b - a as numpy computes it on int64 arrays: modulo 2^64. */
static int64_t wrapped_difference(int64_t b, int64_t a) {
    return (int64_t)((uint64_t)b - (uint64_t)a);
}

int span_bounds(const int64_t *bounds, size_t nb, const int64_t *indices, size_t n,
                int64_t max_gap, int64_t max_skip, int64_t *begins, int64_t *ends, int64_t *gaps,
                size_t *count, size_t *bad) {
    /* Every index is checked before a bound is read: a caller's error is reported whole. */
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0 || (uint64_t)indices[i] + 1 >= nb) {
            *bad = i;
            return 1;
        }
    }
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        begins[i] = bounds[indices[i]];
        ends[i] = bounds[indices[i] + 1];
        /* Both indices are known frames, below 2^63 - 1: their difference cannot overflow. */
        if (i > 0 && (indices[i] - indices[i - 1] > max_gap ||
                      (max_skip >= 0 && wrapped_difference(begins[i], ends[i - 1]) > max_skip)))
            gaps[found++] = (int64_t)i;
    }
    *count = found;
    return 0;
}
