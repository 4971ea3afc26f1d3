/* A workload for the register-pressure programs of this folder: `bench_main
 * chacha20|sha256|dgemm` runs one of them on fixed inputs and prints a
 * checksum (the same under every register allocation, or it is a miscompile). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void chacha20_xor(uint8_t *buf, size_t len, const uint32_t key[8], const uint32_t nonce[3], uint32_t counter);
void sha256_blocks(uint32_t h[8], const uint8_t *data, size_t blocks);
void dgemm_4x8(size_t m, size_t n, size_t k, const double *a, const double *b, double *c);

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    static uint8_t buf[1 << 18];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131 + 7);
    if (!strcmp(what, "chacha20")) {
        const uint32_t key[8] = {1, 2, 3, 4, 5, 6, 7, 8}, nonce[3] = {9, 10, 11};
        for (int r = 0; r < 4; r++) chacha20_xor(buf, sizeof buf, key, nonce, (uint32_t)r);
        uint64_t sum = 0;
        for (size_t i = 0; i < sizeof buf; i++) sum = sum * 31 + buf[i];
        printf("%016llx\n", (unsigned long long)sum);
    } else if (!strcmp(what, "sha256")) {
        uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
        for (int r = 0; r < 4; r++) sha256_blocks(h, buf, sizeof buf / 64);
        for (int i = 0; i < 8; i++) printf("%08x", h[i]);
        printf("\n");
    } else if (!strcmp(what, "dgemm")) {
        enum { M = 96, N = 96, K = 96 };
        static double a[M * K], b[K * N], c[M * N];
        for (int i = 0; i < M * K; i++) a[i] = (i % 17) * 0.25 - 2.0;
        for (int i = 0; i < K * N; i++) b[i] = (i % 13) * 0.5 - 3.0;
        for (int r = 0; r < 8; r++) dgemm_4x8(M, N, K, a, b, c);
        double sum = 0;
        for (int i = 0; i < M * N; i++) sum += c[i] * (i % 7 + 1);
        printf("%.6f\n", sum);
    } else {
        fprintf(stderr, "usage: %s chacha20|sha256|dgemm\n", argv[0]);
        return 2;
    }
    return 0;
}
