/* CRC32C (Castagnoli), the checksum of TFRecord frames (specs/native.md, "crc32c").
 *
 * crc32c_update() continues a CRC over a buffer: crc32c_update(crc32c_update(0, a), b) is the CRC
 * of a followed by b.  The implementation is chosen once, at crc32c_init(): the SSE4.2 instruction
 * on x86-64, the CRC extension on ARMv8, or a table walk on any other processor. */
#ifndef READPLAN_CRC32C_H
#define READPLAN_CRC32C_H

#include <stddef.h>
#include <stdint.h>

void crc32c_init(void);
uint32_t crc32c_update(uint32_t crc, const unsigned char *data, size_t size);
/* The CRC32C of src[0:size] (from 0), computed while the bytes are copied to dst: one pass over
 * them instead of two.  The buffers do not overlap. */
uint32_t crc32c_copy(unsigned char *dst, const unsigned char *src, size_t size);
/* The CRC32C (from 0) of each of three buffers, computed side by side: for short buffers, whose
 * one CRC is bound by the instruction's latency, this costs little more than one. */
void crc32c_three(const unsigned char *const data[3], const size_t size[3], uint32_t out[3]);
/* "sse4.2", "armv8-crc" or "table": what crc32c_init() chose. */
const char *crc32c_engine(void);
/* The table walk whatever the processor: the reference the instruction paths are tested against. */
uint32_t crc32c_table_update(uint32_t crc, const unsigned char *data, size_t size);

static inline uint32_t crc32c_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

#endif
