#include "frames.h"

#include <string.h>

#include "crc32c.h"

static inline uint64_t le64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t le32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

scan_result scan_frames(const unsigned char *data, size_t size, size_t off, size_t limit,
                        uint64_t max_length, int verify, int64_t *starts, int64_t *lengths,
                        size_t capacity) {
    scan_result r = {0, off, SCAN_LIMIT};
    if (limit > capacity)
        limit = capacity;
    /* Frames of equal length have equal length CRCs: the last one computed is kept. */
    int known = 0;
    uint64_t known_length = 0;
    uint32_t known_crc = 0;
    while (r.count < limit) {
        if (off > size || size - off < 16) {
            r.stop = SCAN_INCOMPLETE;
            break;
        }
        const unsigned char *frame = data + off;
        uint64_t length = le64(frame);
        uint32_t stored = le32(frame + 8);
        if (!known || length != known_length) {
            known_crc = crc32c_mask(crc32c_update(0, frame, 8));
            known_length = length;
            known = 1;
        }
        if (stored != known_crc) {
            r.stop = SCAN_LENGTH_CRC;
            break;
        }
        if (length > max_length) {
            r.stop = SCAN_TOO_LONG;
            break;
        }
        if (length > size - off - 16) {
            r.stop = SCAN_INCOMPLETE;
            break;
        }
        if (verify && crc32c_mask(crc32c_update(0, frame + 12, (size_t)length)) !=
                          le32(frame + 12 + length)) {
            r.stop = SCAN_DATA_CRC;
            break;
        }
        starts[r.count] = (int64_t)off;
        lengths[r.count] = (int64_t)length;
        r.count++;
        off += (size_t)length + 16;
    }
    r.end = off;
    return r;
}

void pack_frames(const unsigned char *data, size_t off, const int64_t *lengths, size_t count,
                 unsigned char *out) {
    for (size_t i = 0; i < count; i++) {
        size_t length = (size_t)lengths[i];
        memcpy(out, data + off + 12, length);
        out += length;
        off += length + 16;
    }
}
