/* A workload for real compressors (the speed check, docs/training.md): reads its
 * input from stdin, compresses it at a fixed level, decompresses the result,
 * checks the round trip, and prints the sizes and an FNV-1a hash of the
 * compressed bytes -- the same under every register allocation, or it is a
 * miscompile. Built with exactly one of -DCODEC_LZ4, -DCODEC_ZSTD,
 * -DCODEC_BROTLI and that library's sources. `codec_main [ROUNDS]` repeats the
 * compression and decompression ROUNDS times (default 1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(CODEC_LZ4)
#include "lz4.h"
#include "lz4hc.h"
#define CODEC "lz4"
static size_t bound(size_t n) { return (size_t)LZ4_compressBound((int)n); }
/* the fast compressor, then HC level 9 (the result kept is HC's) */
static size_t compress(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    int fast = LZ4_compress_default((const char *)src, (char *)dst, (int)n, (int)cap);
    if (fast <= 0) return 0;
    int hc = LZ4_compress_HC((const char *)src, (char *)dst, (int)n, (int)cap, 9);
    return hc > 0 ? (size_t)hc : 0;
}
static size_t decompress(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)cap);
    return r < 0 ? (size_t)-1 : (size_t)r;
}
#elif defined(CODEC_ZSTD)
#include "zstd.h"
#define CODEC "zstd"
static size_t bound(size_t n) { return ZSTD_compressBound(n); }
static size_t compress(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    size_t r = ZSTD_compress(dst, cap, src, n, 6);
    return ZSTD_isError(r) ? 0 : r;
}
static size_t decompress(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    size_t r = ZSTD_decompress(dst, cap, src, n);
    return ZSTD_isError(r) ? (size_t)-1 : r;
}
#elif defined(CODEC_BROTLI)
#include <brotli/decode.h>
#include <brotli/encode.h>
#define CODEC "brotli"
static size_t bound(size_t n) { return BrotliEncoderMaxCompressedSize(n); }
static size_t compress(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    size_t out = cap;
    return BrotliEncoderCompress(5, 20, BROTLI_MODE_TEXT, n, src, &out, dst) ? out : 0;
}
static size_t decompress(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    size_t out = cap;
    return BrotliDecoderDecompress(n, src, &out, dst) == BROTLI_DECODER_RESULT_SUCCESS ? out : (size_t)-1;
}
#else
#error "define one of CODEC_LZ4, CODEC_ZSTD, CODEC_BROTLI"
#endif

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    size_t cap = 1 << 16, n = 0;
    uint8_t *in = malloc(cap);
    for (size_t got; in && (got = fread(in + n, 1, cap - n, stdin)) > 0;) {
        n += got;
        if (n == cap) in = realloc(in, cap *= 2);
    }
    if (!in || n == 0) { fprintf(stderr, "%s: no input on stdin\n", CODEC); return 2; }
    size_t zcap = bound(n), z = 0;
    uint8_t *packed = malloc(zcap), *back = malloc(n + 1);
    for (int r = 0; r < rounds; r++) {
        z = compress(packed, zcap, in, n);
        if (z == 0) { fprintf(stderr, "%s: compression failed\n", CODEC); return 1; }
        size_t m = decompress(back, n + 1, packed, z);
        if (m != n || memcmp(back, in, n) != 0) { fprintf(stderr, "%s: round trip differs\n", CODEC); return 1; }
    }
    printf("%s %zu -> %zu bytes, fnv1a %016llx\n", CODEC, n, z, (unsigned long long)fnv1a(packed, z));
    return 0;
}
