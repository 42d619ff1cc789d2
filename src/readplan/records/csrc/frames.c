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

int frame_header(const unsigned char *data, size_t size, size_t off, uint64_t max_length,
                 length_crcs *known, uint64_t *length_out) {
    if (off > size || size - off < 16)
        return SCAN_INCOMPLETE;
    const unsigned char *frame = data + off;
    uint64_t length = le64(frame);
    if (!known->valid || length != known->length) {
        known->crc = crc32c_mask(crc32c_update(0, frame, 8));
        known->length = length;
        known->valid = 1;
    }
    if (le32(frame + 8) != known->crc)
        return SCAN_LENGTH_CRC;
    if (length > max_length)
        return SCAN_TOO_LONG;
    if (length > size - off - 16)
        return SCAN_INCOMPLETE;
    *length_out = length;
    return -1;
}

scan_result scan_frames(const unsigned char *data, size_t size, size_t off, size_t limit,
                        uint64_t max_length, int verify, int64_t *starts, int64_t *lengths,
                        size_t capacity) {
    scan_result r = {0, off, SCAN_LIMIT};
    if (limit > capacity)
        limit = capacity;
    length_crcs known = {0, 0, 0};
    while (r.count < limit) {
        uint64_t length;
        int stop = frame_header(data, size, off, max_length, &known, &length);
        if (stop >= 0) {
            r.stop = stop;
            break;
        }
        const unsigned char *frame = data + off;
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
