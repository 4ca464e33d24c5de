/* CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final xor
 * 0xFFFFFFFF), the checksum of TFRecord framing (TensorBoard event files) and of tsrnn's
 * checkpoint data. Check value: tsrnn_crc32c(0, "123456789", 9) == 0xE3069283.
 */
#ifndef TSRNN_CRC32C_H
#define TSRNN_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues `crc` (0 to start) over `nbytes` bytes, zlib-style: crc32c(crc32c(0, a), b) is
 * the CRC of a followed by b. `data` may be NULL when nbytes is 0. */
uint32_t tsrnn_crc32c(uint32_t crc, const void *data, size_t nbytes);

/* TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, mod 2^32. */
uint32_t tsrnn_crc32c_mask(uint32_t crc);

#endif
