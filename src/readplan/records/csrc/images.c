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

/* Every output value a pixel can have: t[c][v] is value v of channel c as the output type,
 * computed once per batch with the same float operations the definition makes per pixel (two
 * roundings; C11 mode contracts no multiply-add), so the same bits. The loops below then do a
 * lookup per byte, with no conversion, no branch and no call per pixel. */
typedef struct {
    uint8_t u8[3][256];
    float f32[3][256];
    uint16_t f16[3][256];
} tables;

static void fill_tables(const image_batch *b, tables *t) {
    for (int c = 0; c < 3; c++)
        for (int v = 0; v < 256; v++) {
            float value = (float)v * b->scale[c] + b->shift[c];
            t->u8[c][v] = (uint8_t)v;
            t->f32[c][v] = value;
            t->f16[c][v] = b->kind == IMAGE_F16 ? half_of(value) : 0;
        }
}

/* One image of h x w x 3 bytes into dst laid out NHWC or NCHW, mirrored when `flip`, each byte
 * through its channel's table: one function per output type T. */
#define IMAGE_LOOPS(NAME, T)                                                                   \
    static void NAME##_nhwc(const uint8_t *src, T *dst, size_t h, size_t w, int flip,          \
                            const T (*t)[256]) {                                               \
        for (size_t y = 0; y < h; y++) {                                                       \
            const uint8_t *s = src + y * w * 3;                                                \
            T *d = dst + y * w * 3;                                                            \
            if (!flip) {                                                                       \
                for (size_t i = 0; i < w * 3; i += 3) {                                        \
                    d[i] = t[0][s[i]];                                                         \
                    d[i + 1] = t[1][s[i + 1]];                                                 \
                    d[i + 2] = t[2][s[i + 2]];                                                 \
                }                                                                              \
                continue;                                                                      \
            }                                                                                  \
            for (size_t x = 0; x < w; x++) {                                                   \
                const uint8_t *p = s + (w - 1 - x) * 3;                                        \
                d[x * 3] = t[0][p[0]];                                                         \
                d[x * 3 + 1] = t[1][p[1]];                                                     \
                d[x * 3 + 2] = t[2][p[2]];                                                     \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void NAME##_nchw(const uint8_t *src, T *dst, size_t h, size_t w, int flip,          \
                            const T (*t)[256]) {                                               \
        for (size_t y = 0; y < h; y++) {                                                       \
            const uint8_t *s = src + y * w * 3;                                                \
            T *d0 = dst + y * w, *d1 = d0 + h * w, *d2 = d1 + h * w;                           \
            if (!flip) {                                                                       \
                for (size_t x = 0; x < w; x++) {                                               \
                    d0[x] = t[0][s[x * 3]];                                                    \
                    d1[x] = t[1][s[x * 3 + 1]];                                                \
                    d2[x] = t[2][s[x * 3 + 2]];                                                \
                }                                                                              \
                continue;                                                                      \
            }                                                                                  \
            for (size_t x = 0; x < w; x++) {                                                   \
                const uint8_t *p = s + (w - 1 - x) * 3;                                        \
                d0[x] = t[0][p[0]];                                                            \
                d1[x] = t[1][p[1]];                                                            \
                d2[x] = t[2][p[2]];                                                            \
            }                                                                                  \
        }                                                                                      \
    }

IMAGE_LOOPS(u8, uint8_t)
IMAGE_LOOPS(f32, float)
IMAGE_LOOPS(f16, uint16_t)

static void one_image(const image_batch *b, const tables *t, const uint8_t *src, void *dst,
                      int flip) {
    size_t h = b->h, w = b->w;
    int last = b->channels_last;
    if (b->kind == IMAGE_U8 && last && !flip)
        memcpy(dst, src, h * w * 3);
    else if (b->kind == IMAGE_U8)
        (last ? u8_nhwc : u8_nchw)(src, dst, h, w, flip, t->u8);
    else if (b->kind == IMAGE_F32)
        (last ? f32_nhwc : f32_nchw)(src, dst, h, w, flip, t->f32);
    else
        (last ? f16_nhwc : f16_nchw)(src, dst, h, w, flip, t->f16);
}

void gather_images(const image_batch *b, void *out) {
    size_t pixels = b->h * b->w * 3;
    size_t item = b->kind == IMAGE_U8 ? 1 : b->kind == IMAGE_F32 ? 4 : 2;
    tables t;
    fill_tables(b, &t);
    for (size_t k = 0; k < b->count; k++) {
        const uint8_t *src = b->images + (size_t)b->rows[k] * pixels;
        int flip = b->flips != NULL && b->flips[k];
        one_image(b, &t, src, (char *)out + k * pixels * item, flip);
    }
}
