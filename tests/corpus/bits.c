/* Bit manipulation and a checksum/CRC module; a few tiny leaf functions
 * used from many places, and one function with no calls at all. */
#include <stdint.h>
#include <stddef.h>

static unsigned popcount32(uint32_t x) {
  unsigned n = 0;
  while (x) { x &= x - 1; ++n; }
  return n;
}
static unsigned clz32(uint32_t x) {
  if (!x) return 32;
  unsigned n = 0;
  while (!(x & 0x80000000u)) { x <<= 1; ++n; }
  return n;
}
static uint32_t reverse_bits(uint32_t x) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) { r = (r << 1) | (x & 1); x >>= 1; }
  return r;
}
static uint32_t next_pow2(uint32_t x) { return x <= 1 ? 1 : 1u << (32 - clz32(x - 1)); }
static int is_pow2(uint32_t x) { return x && popcount32(x) == 1; }

static uint32_t crc32_byte(uint32_t crc, uint8_t b) {
  crc ^= b;
  for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  return crc;
}
static uint32_t crc32(const uint8_t *p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) crc = crc32_byte(crc, p[i]);
  return ~crc;
}
static uint32_t adler32(const uint8_t *p, size_t n) {
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < n; ++i) { a = (a + p[i]) % 65521; b = (b + a) % 65521; }
  return (b << 16) | a;
}

uint32_t bits_leaf(uint32_t x) { return (x ^ (x >> 7)) * 0x9E3779B1u; }

uint32_t bits_demo(const uint8_t *buf, size_t n) {
  uint32_t acc = crc32(buf, n) ^ adler32(buf, n);
  for (size_t i = 0; i + 4 <= n; i += 4) {
    uint32_t w = (uint32_t)buf[i] | ((uint32_t)buf[i + 1] << 8) | ((uint32_t)buf[i + 2] << 16) | ((uint32_t)buf[i + 3] << 24);
    acc += popcount32(w) + clz32(w) + (is_pow2(w) ? next_pow2(w) : reverse_bits(w));
    acc = bits_leaf(acc);
  }
  return acc;
}
