/* Batches of decoded images gathered from a (N, H, W, 3) uint8 array, flipped and normalized in
 * one pass (specs/native.md, "Image batches"). */
#ifndef READPLAN_IMAGES_H
#define READPLAN_IMAGES_H

#include <stddef.h>
#include <stdint.h>

enum image_out { IMAGE_U8 = 0, IMAGE_F32 = 1, IMAGE_F16 = 2 };

/* The shapes: n source images of h x w x 3; `count` rows (each < n, checked by the caller). */
typedef struct {
    const uint8_t *images;
    size_t n, h, w;
    const int64_t *rows;
    const uint8_t *flips; /* one flag per row, or NULL: no flips */
    size_t count;
    float scale[3], shift[3]; /* out = x * scale[c] + shift[c], in float32 */
    int kind;                 /* enum image_out */
    int channels_last;        /* NHWC when set, else NCHW */
} image_batch;

void gather_images(const image_batch *batch, void *out);
/* IEEE binary16 of a float, rounded to nearest even (numpy's float32 -> float16). */
uint16_t half_of(float value);

#endif
