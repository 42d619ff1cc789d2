#include "images.h"

#include <string.h>

uint16_t half_of(float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    uint32_t sign = (bits >> 16) & 0x8000u;
    uint32_t exponent = (bits >> 23) & 0xFFu;
    uint32_t mantissa = bits & 0x7FFFFFu;
    if (exponent == 0xFF) {
        /* inf; a nan keeps its top payload bits, and stays a nan when they are all 0 */
        uint32_t payload = mantissa >> 13;
        return (uint16_t)(sign | 0x7C00u | (mantissa && !payload ? 1u : payload));
    }
    int e = (int)exponent - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        /* a subnormal half: the implicit bit joins the mantissa, shifted right */
        mantissa |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t half = mantissa >> shift;
        uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
        half++; /* a carry into the exponent rounds up to the next binade, or to inf */
    return (uint16_t)(sign | half);
}

/* One image's pixel (y, x, c) as the output type, at its place in the output image. */
static void put(const image_batch *b, void *image_out, size_t y, size_t x, size_t c,
                uint8_t pixel) {
    size_t at = b->channels_last ? (y * b->w + x) * 3 + c : (c * b->h + y) * b->w + x;
    if (b->kind == IMAGE_U8) {
        ((uint8_t *)image_out)[at] = pixel;
        return;
    }
    float v = (float)pixel * b->scale[c] + b->shift[c];
    if (b->kind == IMAGE_F32)
        ((float *)image_out)[at] = v;
    else
        ((uint16_t *)image_out)[at] = half_of(v);
}

void gather_images(const image_batch *b, void *out) {
    size_t pixels = b->h * b->w * 3;
    size_t item = b->kind == IMAGE_U8 ? 1 : b->kind == IMAGE_F32 ? 4 : 2;
    for (size_t k = 0; k < b->count; k++) {
        const uint8_t *src = b->images + (size_t)b->rows[k] * pixels;
        void *dst = (char *)out + k * pixels * item;
        int flip = b->flips != NULL && b->flips[k];
        if (b->kind == IMAGE_U8 && b->channels_last && !flip) {
            memcpy(dst, src, pixels);
            continue;
        }
        for (size_t y = 0; y < b->h; y++)
            for (size_t x = 0; x < b->w; x++) {
                const uint8_t *p = src + (y * b->w + (flip ? b->w - 1 - x : x)) * 3;
                put(b, dst, y, x, 0, p[0]);
                put(b, dst, y, x, 1, p[1]);
                put(b, dst, y, x, 2, p[2]);
            }
    }
}
