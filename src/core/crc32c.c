/* CRC-32C (include/tsrnn/crc32c.h), slice-by-8 in portable C.
 *
 * The byte-at-a-time reflected CRC is c = T0[(c ^ x) & 0xff] ^ (c >> 8). Slice-by-8 folds eight
 * such steps into one round of eight table look-ups: Tk[i] is the CRC state after byte i is
 * followed by k zero bytes, so the eight bytes of a word, each looked up in the table of its
 * distance from the word's end, combine by xor (Intel's "slicing-by-8", Kounavis and Berry,
 * 2005). Words are assembled from bytes, so it runs on any endianness and alignment; compilers
 * turn the assembly into one load on little-endian machines. The 8 KiB of tables are computed
 * once, on first use, under pthread_once.
 */
#include "tsrnn/crc32c.h"

#include <pthread.h>

#define CRC32C_POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++)
            table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
}

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t tsrnn_crc32c(uint32_t crc, const void *data, size_t nbytes)
{
    pthread_once(&table_once, build_tables);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; nbytes >= 8; nbytes -= 8, p += 8) {
        uint32_t lo = load_le32(p) ^ c;
        uint32_t hi = load_le32(p + 4);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
            table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
    }
    for (; nbytes > 0; nbytes--, p++)
        c = table[0][(c ^ *p) & 0xff] ^ (c >> 8);
    return ~c;
}

uint32_t tsrnn_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
