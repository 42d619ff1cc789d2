/* The TFRecord frame scan (specs/native.md, "scan_frames"): a frame is uint64 length, uint32
 * masked CRC of the length, the data, uint32 masked CRC of the data, all little-endian. */
#ifndef READPLAN_FRAMES_H
#define READPLAN_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Why a scan stopped.  The values are part of the Python contract (records/tfrecord/_scan.py). */
enum scan_stop {
    SCAN_INCOMPLETE = 0,  /* the next frame does not lie complete in the buffer */
    SCAN_LIMIT = 1,       /* `limit` frames were found, or the output arrays are full */
    SCAN_LENGTH_CRC = 2,  /* the next frame's length CRC does not verify */
    SCAN_TOO_LONG = 3,    /* the next frame's length is over `max_length` */
    SCAN_DATA_CRC = 4,    /* the next frame's data CRC does not verify */
};

typedef struct {
    size_t count; /* frames found */
    size_t end;   /* offset after the last frame found: where the next one starts */
    int stop;     /* enum scan_stop */
} scan_result;

/* Little-endian words of a frame (little-endian hosts only: see the check in core.c). */
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

/* The masked CRC of the last length field seen: frames of equal length have equal length CRCs. */
typedef struct {
    int valid;
    uint64_t length;
    uint32_t crc;
} length_crcs;

/* The header of the frame at `off` checked as scan_frames() checks it, in its order: -1 and the
 * frame's data length in *length when the frame lies complete in data[0:size] with a sound
 * header and a length no greater than max_length, else why not (enum scan_stop). */
int frame_header(const unsigned char *data, size_t size, size_t off, uint64_t max_length,
                 length_crcs *known, uint64_t *length);

/* Frames from `off` in data[0:size], at most `limit` (and at most `capacity`): their starts and
 * data lengths go to starts[] and lengths[].  Every length is compared with the bytes left
 * before it is used; nothing is read outside data[0:size]. */
scan_result scan_frames(const unsigned char *data, size_t size, size_t off, size_t limit,
                        uint64_t max_length, int verify, int64_t *starts, int64_t *lengths,
                        size_t capacity);

/* scan_frames() from `off` for at most `limit` frames (starts[] and lengths[] hold them), ending
 * once `budget` bytes of frames were found (at least one frame when there is one): a window of
 * frames small enough to stay in the processor's cache until they are copied out.  The data CRCs
 * are computed three frames at a time (crc32c_three(): short frames' CRCs are bound by the
 * instruction's latency), and `known` carries the last length CRC from one call to the next.
 * Stops with SCAN_LIMIT when `limit` or `budget` ends the window. */
scan_result scan_window(const unsigned char *data, size_t size, size_t off, size_t limit,
                        size_t budget, uint64_t max_length, int verify, length_crcs *known,
                        int64_t *starts, int64_t *lengths);

/* The masked CRC stored after the data of the frame at `frame` whose data is `length` bytes. */
static inline uint32_t stored_data_crc(const unsigned char *frame, uint64_t length) {
    return le32(frame + 12 + length);
}

/* The data of the frame at `off` whose header frame_header() found sound, with data length
 * `length`, copied to out while its CRC32C is computed: -1 when the CRC verifies (or not
 * `verify`), else SCAN_DATA_CRC.  The bytes checked are the bytes copied, in one read of each:
 * another thread writing the buffer meanwhile cannot make unchecked bytes pass. */
int copy_frame(const unsigned char *data, size_t off, uint64_t length, int verify,
               unsigned char *out);

/* Frames shorter than this have their data CRCs computed three side by side (a short frame's CRC
 * is bound by the instruction's latency), apart from their copy; longer ones while they are
 * copied: one pass beats a check and a copy, and their own CRC has streams enough. */
#define COPY_CHECKED 1024

/* The data of up to `count` consecutive frames from `off`, whose data lengths are lengths[] (as
 * a scan_frames() from `off` found them), copied back to back into out, which holds their sum,
 * with `verify` each data CRC computed over the copy (copy_frame() for long frames; short ones
 * in threes, crc32c_three() over their copies): returns how many were copied before the first
 * whose data CRC fails (`count` when none does). */
size_t copy_frames(const unsigned char *data, size_t off, const int64_t *lengths, size_t count,
                   int verify, unsigned char *out);

#endif
