/* The check of chosen frames in a span of a TFRecord file (specs/native.md, "cut_frames"). */
#ifndef READPLAN_SPANS_H
#define READPLAN_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "frames.h"

/* What check_frames() found. */
enum frames_check {
    FRAMES_SOUND = 0,   /* every frame is sound: its payload may be cut */
    FRAMES_DAMAGED = 1, /* some frame fails a check (the caller reads them one by one) */
    FRAMES_OUTSIDE = 2, /* frame `*bad` does not lie in data[0:size] (a caller's error) */
};

/* Frames i = 0 .. n - 1 of data[0:size] span [begins[i], ends[i]): a uint64 length, its masked
 * CRC32C, the payload, the payload's masked CRC32C.  Checked per frame, in order: the span lies
 * inside the data; it holds at least the 16 framing bytes and a payload of at most max_length;
 * with `headers`, its stored length is the span's and its length CRC verifies; its data CRC
 * verifies.  With `outs`, the CRC is computed over frame i's payload in outs[i], so that what
 * is delivered is what was checked: a payload of COPY_CHECKED bytes or more is copied there while
 * its CRC is computed, a shorter one must already be there (copied when its object was made,
 * while that memory was in the cache).  Nothing outside data[0:size] is read. */
int check_frames(const unsigned char *data, size_t size, const int64_t *begins,
                 const int64_t *ends, size_t n, int headers, uint64_t max_length,
                 unsigned char *const *outs, size_t *bad);

/* The frames indices[0 .. n - 1] of a file whose frame j spans [bounds[j], bounds[j + 1]) (nb
 * bounds: nb - 1 frames known): begins[i] = bounds[indices[i]], ends[i] = bounds[indices[i] + 1],
 * and in gaps[0 .. *count - 1] (increasing) each i >= 1 where a new span starts: indices[i] -
 * indices[i - 1] > max_gap, or, when max_skip >= 0, begins[i] - ends[i - 1] > max_skip (a
 * difference of bounds wraps as int64 arithmetic does in numpy).  Returns 0; 1 with *bad the
 * first i whose index is not a known frame (nothing is read through it).  begins, ends and gaps
 * hold n entries each. */
int span_bounds(const int64_t *bounds, size_t nb, const int64_t *indices, size_t n,
                int64_t max_gap, int64_t max_skip, int64_t *begins, int64_t *ends, int64_t *gaps,
                size_t *count, size_t *bad);

#endif
