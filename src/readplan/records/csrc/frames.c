#include "frames.h"

#include <string.h>

#include "crc32c.h"

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

/* The data CRCs of `group` (1 to 3) frames found by frame_header(): the index of the first whose
 * CRC fails, or `group`. */
static size_t verified(const unsigned char *const data[3], const size_t size[3], size_t group) {
    uint32_t crc[3];
    if (group == 3) {
        crc32c_three(data, size, crc);
    } else {
        for (size_t k = 0; k < group; k++)
            crc[k] = crc32c_update(0, data[k], size[k]);
    }
    for (size_t k = 0; k < group; k++)
        if (crc32c_mask(crc[k]) != le32(data[k] + size[k]))
            return k;
    return group;
}

scan_result scan_window(const unsigned char *data, size_t size, size_t off, size_t limit,
                        size_t budget, uint64_t max_length, int verify, length_crcs *known,
                        int64_t *starts, int64_t *lengths) {
    scan_result r = {0, off, SCAN_LIMIT};
    size_t scanned = 0;
    while (r.count < limit && scanned < budget) {
        const unsigned char *group_data[3];
        size_t group_size[3], group = 0, at = off;
        int pending = -1;
        while (group < 3 && r.count + group < limit && scanned < budget) {
            uint64_t length;
            pending = frame_header(data, size, at, max_length, known, &length);
            if (pending >= 0)
                break;
            starts[r.count + group] = (int64_t)at;
            lengths[r.count + group] = (int64_t)length;
            group_data[group] = data + at + 12;
            group_size[group] = (size_t)length;
            group++;
            scanned += (size_t)length + 16;
            at += (size_t)length + 16;
        }
        size_t good = verify && group ? verified(group_data, group_size, group) : group;
        r.count += good;
        if (good < group) {
            r.end = (size_t)starts[r.count];
            r.stop = SCAN_DATA_CRC;
            return r;
        }
        off = at;
        if (pending >= 0) {
            r.stop = pending;
            break;
        }
    }
    r.end = off;
    return r;
}

int copy_frame(const unsigned char *data, size_t off, uint64_t length, int verify,
               unsigned char *out) {
    const unsigned char *frame = data + off;
    if (!verify) {
        memcpy(out, frame + 12, (size_t)length);
        return -1;
    }
    uint32_t crc = crc32c_copy(out, frame + 12, (size_t)length);
    return crc32c_mask(crc) == stored_data_crc(frame, length) ? -1 : SCAN_DATA_CRC;
}

size_t copy_frames(const unsigned char *data, size_t off, const int64_t *lengths, size_t count,
                   int verify, unsigned char *out) {
    size_t i = 0;
    while (i < count) {
        size_t length = (size_t)lengths[i];
        if (!verify || length >= COPY_CHECKED || count - i < 3) {
            if (copy_frame(data, off, length, verify, out) >= 0)
                return i;
            out += length;
            off += length + 16;
            i++;
            continue;
        }
        /* Three short frames copied, then their CRCs computed side by side over the copies
         * (still in the cache): what is delivered is what was checked. */
        const unsigned char *copies[3];
        size_t sizes[3];
        uint32_t crc[3], stored[3];
        for (size_t k = 0; k < 3; k++) {
            sizes[k] = (size_t)lengths[i + k];
            memcpy(out, data + off + 12, sizes[k]);
            stored[k] = stored_data_crc(data + off, sizes[k]);
            copies[k] = out;
            out += sizes[k];
            off += sizes[k] + 16;
        }
        crc32c_three(copies, sizes, crc);
        for (size_t k = 0; k < 3; k++)
            if (crc32c_mask(crc[k]) != stored[k])
                return i + k;
        i += 3;
    }
    return count;
}
