/* libFuzzer target: image batches gathered, flipped and normalized (gather_images,
 * specs/native.md §8).
 *
 * The first byte chooses the output type, the layout and whether rows are flipped; the next
 * three the shape (1-4 source images of 0-7 x 0-7 pixels) and the number of rows (0-15); then
 * come the scale and shift as the bits of six floats (NaNs, infinities and subnormals
 * included), one byte per row (its source image, taken modulo n: the caller checks rows) and
 * one per flip; the rest are the pixels, repeated to fill the source images.  Sources and
 * output lie in allocations of exactly their size, so that AddressSanitizer sees any access
 * past them.  Every output value is checked against a plain recomputation, the float16 ones
 * against a rounding done in double precision. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "images.h"

#define HEAD 28 /* kind, shape and count bytes, six floats */

static uint32_t bits_of(float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    return bits;
}

/* IEEE binary16 of a float, nearest with ties to even, reckoned in double (exact here: a
 * float scaled by a power of two is a double, and nearbyint rounds ties to even). */
static uint16_t reference_half(float value) {
    uint32_t bits = bits_of(value);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    if (isnan(value)) {
        /* numpy keeps the top ten payload bits, and a NaN whose kept bits are all 0 stays one */
        uint16_t payload = (uint16_t)((bits & 0x7FFFFFu) >> 13);
        return (uint16_t)(sign | 0x7C00u | (payload ? payload : 1u));
    }
    double magnitude = fabs((double)value);
    if (magnitude >= 65520.0) /* halfway above the largest half, 65504: to even is infinity */
        return (uint16_t)(sign | 0x7C00u);
    if (magnitude < ldexp(1.0, -14)) /* subnormal halves count units of 2^-24 */
        return (uint16_t)(sign | (uint16_t)nearbyint(ldexp(magnitude, 24)));
    int exponent;
    frexp(magnitude, &exponent); /* magnitude = m * 2^exponent, m in [0.5, 1) */
    exponent -= 1;
    double units = nearbyint(ldexp(magnitude, 10 - exponent)); /* in [1024, 2048] */
    if (units == 2048.0) {
        units = 1024.0;
        exponent += 1;
    }
    return (uint16_t)(sign | (uint16_t)((exponent + 15) << 10) | (uint16_t)(units - 1024.0));
}

/* Whether out's value at (k, c, y, x) is source pixel byte v of channel c as the type asks. */
static int value_ok(const image_batch *b, const void *out, size_t at, uint8_t v, int c) {
    float value = (float)v * b->scale[c] + b->shift[c];
    if (b->kind == IMAGE_U8)
        return ((const uint8_t *)out)[at] == v;
    if (b->kind == IMAGE_F32)
        return bits_of(((const float *)out)[at]) == bits_of(value);
    return ((const uint16_t *)out)[at] == reference_half(value);
}

static int batch_ok(const image_batch *b, const void *out) {
    size_t h = b->h, w = b->w;
    for (size_t k = 0; k < b->count; k++) {
        const uint8_t *src = b->images + (size_t)b->rows[k] * h * w * 3;
        int flip = b->flips != NULL && b->flips[k];
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) {
                    uint8_t v = src[(y * w + (flip ? w - 1 - x : x)) * 3 + (size_t)c];
                    size_t at = b->channels_last ? ((k * h + y) * w + x) * 3 + (size_t)c
                                                 : ((k * 3 + (size_t)c) * h + y) * w + x;
                    if (!value_ok(b, out, at, v, c))
                        return 0;
                }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    if (size < HEAD)
        return 0;
    image_batch b = {0};
    b.kind = input[0] % 3;
    b.channels_last = (input[0] >> 2) & 1;
    int flipped = (input[0] >> 3) & 1;
    b.n = 1 + input[1] % 4;
    b.h = input[2] & 7;
    b.w = (input[2] >> 3) & 7;
    b.count = input[3] & 15;
    for (int c = 0; c < 3; c++) {
        memcpy(&b.scale[c], input + 4 + 4 * c, 4);
        memcpy(&b.shift[c], input + 16 + 4 * c, 4);
    }
    size_t need = HEAD + b.count * (flipped ? 2 : 1);
    if (size < need)
        return 0;
    int64_t *rows = malloc((b.count ? b.count : 1) * sizeof *rows);
    uint8_t *flips = malloc(b.count ? b.count : 1);
    for (size_t k = 0; k < b.count; k++) {
        rows[k] = input[HEAD + k] % b.n;
        flips[k] = flipped ? input[HEAD + b.count + k] : 0;
    }
    b.rows = rows;
    b.flips = flipped ? flips : NULL;
    size_t pixels = b.n * b.h * b.w * 3, rest = size - need;
    uint8_t *images = malloc(pixels ? pixels : 1);
    for (size_t i = 0; i < pixels; i++)
        images[i] = rest ? input[need + i % rest] : (uint8_t)i;
    b.images = images;
    size_t item = b.kind == IMAGE_U8 ? 1 : b.kind == IMAGE_F32 ? 4 : 2;
    size_t bytes = b.count * b.h * b.w * 3 * item;
    void *out = malloc(bytes ? bytes : 1);
    gather_images(&b, out);
    if (!batch_ok(&b, out))
        abort();
    free(out);
    free(images);
    free(flips);
    free(rows);
    return 0;
}
