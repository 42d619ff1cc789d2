/* CRC32C: slicing-by-8 tables, and the processor's CRC instruction where it has one.
 *
 * The instruction has a latency of three cycles and a throughput of one, so a long buffer is cut
 * into three interleaved streams whose CRCs are joined afterwards: the CRC of A followed by B is
 * shift(crc(A), |B|) ^ crc0(B), where shift() is linear in the CRC and is done with four table
 * lookups for the three block lengths used here.
 *
 * Where the processor has 512-bit carry-less multiplication (AVX-512 VPCLMULQDQ), buffers of
 * FOLD_MIN bytes and more are folded instead: four 64-byte accumulators each take the next 256
 * bytes as acc * x^2048 + next (mod P, computed on 64-bit halves by two multiplications with
 * x^(2048+63) and x^(2048-1) mod P), then fold onto one 16-byte value that stands for every byte
 * so far, whose CRC the instruction finishes with the tail. */
#include "crc32c.h"

#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define READPLAN_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <arm_acle.h>
#include <sys/auxv.h>
#define READPLAN_ARM 1
#endif

#define POLY 0x82F63B78u
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
#define TINY_BLOCK 32

/* Folding constants: for a distance of D bytes, bit-reflected x^(64 + 8D - 1) mod P and
 * x^(8D - 1) mod P in the upper halves of 64-bit words (the "- 1" undoes the one-bit shift of a
 * carry-less product of reflected operands). */
#define FOLD_MIN 512
#define K256_1 0xe9a5d8be00000000ULL
#define K256_2 0x1426a81500000000ULL
#define K64_1 0x1c19243b00000000ULL
#define K64_2 0x75bba45b00000000ULL
#define K48_1 0xa46ef4aa00000000ULL
#define K48_2 0x6051243f00000000ULL
#define K32_1 0x33ccbbbc00000000ULL
#define K32_2 0xa2158b3400000000ULL
#define K16_1 0x3743f7bd00000000ULL
#define K16_2 0x3171d43000000000ULL

static uint32_t table[8][256];
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static uint32_t shift_tiny[4][256];
static uint32_t (*engine)(uint32_t, const unsigned char *, size_t);
static uint32_t (*copy_engine)(unsigned char *, const unsigned char *, size_t);
static void (*three_engine)(const unsigned char *const[3], const size_t[3], uint32_t[3]);
static const char *engine_name = "table";

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v; /* little-endian hosts only: see the check in core.c */
}

/* The raw state (no pre- or post-inversion) after `size` more bytes. */
static uint32_t table_raw(uint32_t c, const unsigned char *p, size_t size) {
    while (size && ((uintptr_t)p & 7)) {
        c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        size--;
    }
    while (size >= 8) {
        uint64_t w = load64(p) ^ c;
        c = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^ table[5][(w >> 16) & 0xFF] ^
            table[4][(w >> 24) & 0xFF] ^ table[3][(w >> 32) & 0xFF] ^ table[2][(w >> 40) & 0xFF] ^
            table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
        p += 8;
        size -= 8;
    }
    while (size--)
        c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

uint32_t crc32c_table_update(uint32_t crc, const unsigned char *data, size_t size) {
    return ~table_raw(~crc, data, size);
}

static uint32_t shift(uint32_t t[4][256], uint32_t c) {
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
}

/* The shift tables: the raw state after `zeros` zero bytes is linear in the state before. */
static void build_shift(uint32_t t[4][256], size_t zeros) {
    static const unsigned char nothing[LONG_BLOCK];
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++)
        basis[bit] = table_raw(1u << bit, nothing, zeros);
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int bit = 0; bit < 8; bit++)
                if (b & (1 << bit))
                    v ^= basis[8 * k + bit];
            t[k][b] = v;
        }
}

#if defined(READPLAN_X86)
#define TARGET __attribute__((target("sse4.2")))
#define CRC8(c, b) _mm_crc32_u8((c), (b))
#define CRC16(c, h) _mm_crc32_u16((c), (h))
#define CRC32(c, v) _mm_crc32_u32((c), (v))
#define CRC64(c, w) ((uint32_t)_mm_crc32_u64((c), (w)))
#elif defined(READPLAN_ARM)
#define TARGET __attribute__((target("+crc")))
#define CRC8(c, b) __crc32cb((c), (b))
#define CRC16(c, h) __crc32ch((c), (h))
#define CRC32(c, v) __crc32cw((c), (v))
#define CRC64(c, w) __crc32cd((c), (w))
#endif

#ifdef TARGET
/* The word at p, also stored at dst + (p - src) when there is a dst: the CRC loops below copy
 * the bytes they checksum (crc32c_copy) or only read them, specialised by the compiler for each
 * since dst is a constant NULL in one of the two callers. */
#define LOAD(p) load_store(p, src, dst)
static inline uint64_t load_store(const unsigned char *p, const unsigned char *src,
                                  unsigned char *dst) {
    uint64_t v = load64(p);
    if (dst)
        memcpy(dst + (p - src), &v, 8);
    return v;
}

/* Three streams of `block` bytes side by side, joined into c; returns where they end. */
TARGET static inline __attribute__((always_inline)) const unsigned char *
triple(uint32_t *state, const unsigned char *p, size_t block, uint32_t t[4][256],
       const unsigned char *src, unsigned char *dst) {
    uint32_t c0 = *state, c1 = 0, c2 = 0;
    const unsigned char *end = p + block;
    while (p < end) {
        c0 = CRC64(c0, LOAD(p));
        c1 = CRC64(c1, LOAD(p + block));
        c2 = CRC64(c2, LOAD(p + 2 * block));
        p += 8;
    }
    c0 = shift(t, c0) ^ c1;
    *state = shift(t, c0) ^ c2;
    return p + 2 * block;
}

/* Unaligned 8-byte loads cost nothing extra on the processors that have the instruction, and a
 * tail of 4, 2 and 1 bytes takes three steps without a loop: records of varying sizes then cost
 * no mispredicted branches. */
TARGET static inline __attribute__((always_inline)) uint32_t
crc_body(uint32_t c, const unsigned char *p, size_t size, unsigned char *dst) {
    const unsigned char *src = p;
    while (size >= 3 * LONG_BLOCK) {
        p = triple(&c, p, LONG_BLOCK, shift_long, src, dst);
        size -= 3 * LONG_BLOCK;
    }
    while (size >= 3 * SHORT_BLOCK) {
        p = triple(&c, p, SHORT_BLOCK, shift_short, src, dst);
        size -= 3 * SHORT_BLOCK;
    }
    /* Records of about 100 bytes are common: three streams already halve their latency. */
    while (size >= 3 * TINY_BLOCK) {
        p = triple(&c, p, TINY_BLOCK, shift_tiny, src, dst);
        size -= 3 * TINY_BLOCK;
    }
    while (size >= 8) {
        c = CRC64(c, LOAD(p));
        p += 8;
        size -= 8;
    }
    if (dst)
        memcpy(dst + (p - src), p, size);
    if (size & 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        c = CRC32(c, v);
        p += 4;
    }
    if (size & 2) {
        uint16_t h;
        memcpy(&h, p, 2);
        c = CRC16(c, h);
        p += 2;
    }
    if (size & 1)
        c = CRC8(c, *p);
    return c;
}

TARGET static uint32_t instruction_raw(uint32_t c, const unsigned char *p, size_t size) {
    return crc_body(c, p, size, NULL);
}

static uint32_t instruction_update(uint32_t crc, const unsigned char *data, size_t size) {
    return ~instruction_raw(~crc, data, size);
}

TARGET static uint32_t instruction_copy(unsigned char *dst, const unsigned char *src, size_t size) {
    return ~crc_body(~0u, src, size, dst);
}

#if defined(READPLAN_X86)
#define FOLD_TARGET __attribute__((target("sse4.2,avx512f,avx512vl,vpclmulqdq")))

FOLD_TARGET static inline __m512i fold(__m512i x, __m512i k) {
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                            _mm512_clmulepi64_epi128(x, k, 0x11));
}

FOLD_TARGET static inline __m512i load_block(const unsigned char *p, unsigned char *dst) {
    __m512i v = _mm512_loadu_si512(p);
    if (dst)
        _mm512_storeu_si512(dst, v);
    return v;
}

/* The raw state after the `size` bytes at p (a multiple of 256, at least 256), copied to dst
 * when there is one. The state enters as the first four bytes' XOR: crc(c, S) = crc(0, S ^ c). */
FOLD_TARGET static uint32_t fold_raw(uint32_t c, const unsigned char *p, size_t size,
                                     unsigned char *dst) {
    const unsigned char *end = p + size;
    __m512i x0 = load_block(p, dst), x1 = load_block(p + 64, dst ? dst + 64 : NULL);
    __m512i x2 = load_block(p + 128, dst ? dst + 128 : NULL);
    __m512i x3 = load_block(p + 192, dst ? dst + 192 : NULL);
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
    const __m512i k256 = _mm512_set_epi64(K256_2, K256_1, K256_2, K256_1, K256_2, K256_1,
                                          K256_2, K256_1);
    for (p += 256; p < end; p += 256) {
        unsigned char *d = dst ? dst + (size - (size_t)(end - p)) : NULL;
        x0 = _mm512_xor_si512(fold(x0, k256), load_block(p, d));
        x1 = _mm512_xor_si512(fold(x1, k256), load_block(p + 64, d ? d + 64 : NULL));
        x2 = _mm512_xor_si512(fold(x2, k256), load_block(p + 128, d ? d + 128 : NULL));
        x3 = _mm512_xor_si512(fold(x3, k256), load_block(p + 192, d ? d + 192 : NULL));
    }
    const __m512i k64 = _mm512_set_epi64(K64_2, K64_1, K64_2, K64_1, K64_2, K64_1, K64_2, K64_1);
    x1 = _mm512_xor_si512(fold(x0, k64), x1);
    x2 = _mm512_xor_si512(fold(x1, k64), x2);
    x3 = _mm512_xor_si512(fold(x2, k64), x3);
    /* The last 64 bytes' lanes 0, 1 and 2 moved 48, 32 and 16 bytes on, onto lane 3. */
    const __m512i lanes = _mm512_set_epi64(0, 0, K16_2, K16_1, K32_2, K32_1, K48_2, K48_1);
    __m512i moved = fold(x3, lanes);
    __m128i r = _mm512_extracti32x4_epi32(x3, 3);
    r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(moved, 0));
    r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(moved, 1));
    r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(moved, 2));
    uint64_t low = (uint64_t)_mm_cvtsi128_si64(r), high = (uint64_t)_mm_extract_epi64(r, 1);
    return (uint32_t)_mm_crc32_u64(_mm_crc32_u64(0, low), high);
}

FOLD_TARGET static inline __attribute__((always_inline)) uint32_t
fold_body(uint32_t c, const unsigned char *p, size_t size, unsigned char *dst) {
    if (size < FOLD_MIN)
        return crc_body(c, p, size, dst);
    size_t folded = size & ~(size_t)255;
    c = fold_raw(c, p, folded, dst);
    return crc_body(c, p + folded, size - folded, dst ? dst + folded : NULL);
}

FOLD_TARGET static uint32_t folding_update(uint32_t crc, const unsigned char *data, size_t size) {
    return ~fold_body(~crc, data, size, NULL);
}

FOLD_TARGET static uint32_t folding_copy(unsigned char *dst, const unsigned char *src,
                                         size_t size) {
    return ~fold_body(~0u, src, size, dst);
}

/* The processor multiplies 512-bit vectors carry-less, and the system saves their registers. */
static int has_folding(void) {
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
          __builtin_cpu_supports("vpclmulqdq")))
        return 0;
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (eax & 0xE6) == 0xE6; /* SSE, AVX, opmask and both halves of the ZMM state */
}
#endif

/* Three CRCs side by side: the bytes all three buffers have are walked in one loop (three
 * independent chains hide the instruction's latency, as triple() does within one buffer), and
 * each buffer's rest by crc_body(). */
TARGET static void instruction_three(const unsigned char *const data[3], const size_t size[3],
                                     uint32_t out[3]) {
    size_t common = size[0] < size[1] ? size[0] : size[1];
    common = (common < size[2] ? common : size[2]) & ~(size_t)7;
    const unsigned char *a = data[0], *b = data[1], *c = data[2];
    uint32_t ca = ~0u, cb = ~0u, cc = ~0u;
    for (size_t i = 0; i < common; i += 8) {
        ca = CRC64(ca, load64(a + i));
        cb = CRC64(cb, load64(b + i));
        cc = CRC64(cc, load64(c + i));
    }
    out[0] = ~crc_body(ca, a + common, size[0] - common, NULL);
    out[1] = ~crc_body(cb, b + common, size[1] - common, NULL);
    out[2] = ~crc_body(cc, c + common, size[2] - common, NULL);
}
#endif

static void table_three(const unsigned char *const data[3], const size_t size[3],
                        uint32_t out[3]) {
    for (int k = 0; k < 3; k++)
        out[k] = crc32c_table_update(0, data[k], size[k]);
}

static uint32_t table_copy(unsigned char *dst, const unsigned char *src, size_t size) {
    memcpy(dst, src, size);
    return crc32c_table_update(0, src, size);
}

static int has_instruction(void) {
#if defined(READPLAN_X86)
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
#elif defined(READPLAN_ARM)
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#else
    return 0;
#endif
}

void crc32c_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (c & 1 ? POLY : 0);
        table[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xFF];
    build_shift(shift_long, LONG_BLOCK);
    build_shift(shift_short, SHORT_BLOCK);
    build_shift(shift_tiny, TINY_BLOCK);
    engine = crc32c_table_update;
    copy_engine = table_copy;
    three_engine = table_three;
#ifdef TARGET
    if (has_instruction()) {
        engine = instruction_update;
        copy_engine = instruction_copy;
        three_engine = instruction_three;
#if defined(READPLAN_X86)
        engine_name = "sse4.2";
        if (has_folding()) {
            engine = folding_update;
            copy_engine = folding_copy;
            engine_name = "sse4.2+vpclmulqdq";
        }
#else
        engine_name = "armv8-crc";
#endif
    }
#else
    (void)has_instruction;
#endif
}

uint32_t crc32c_update(uint32_t crc, const unsigned char *data, size_t size) {
    return engine(crc, data, size);
}

uint32_t crc32c_copy(unsigned char *dst, const unsigned char *src, size_t size) {
    return copy_engine(dst, src, size);
}

void crc32c_three(const unsigned char *const data[3], const size_t size[3], uint32_t out[3]) {
    three_engine(data, size, out);
}

const char *crc32c_engine(void) { return engine_name; }
