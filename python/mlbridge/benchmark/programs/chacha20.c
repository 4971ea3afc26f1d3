/* ChaCha20 block function (RFC 8439) over a buffer: 16 live 32-bit words in
 * every double round, more than x86-64's general registers. */
#include <stdint.h>
#include <stddef.h>

#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d) \
    a += b; d ^= a; d = ROTL(d, 16); c += d; b ^= c; b = ROTL(b, 12); \
    a += b; d ^= a; d = ROTL(d, 8);  c += d; b ^= c; b = ROTL(b, 7)

void chacha20_block(uint32_t out[16], const uint32_t in[16]) {
    uint32_t x0 = in[0], x1 = in[1], x2 = in[2], x3 = in[3], x4 = in[4], x5 = in[5], x6 = in[6], x7 = in[7];
    uint32_t x8 = in[8], x9 = in[9], x10 = in[10], x11 = in[11], x12 = in[12], x13 = in[13], x14 = in[14], x15 = in[15];
    for (int i = 0; i < 10; i++) {
        QR(x0, x4, x8, x12); QR(x1, x5, x9, x13); QR(x2, x6, x10, x14); QR(x3, x7, x11, x15);
        QR(x0, x5, x10, x15); QR(x1, x6, x11, x12); QR(x2, x7, x8, x13); QR(x3, x4, x9, x14);
    }
    out[0] = x0 + in[0]; out[1] = x1 + in[1]; out[2] = x2 + in[2]; out[3] = x3 + in[3];
    out[4] = x4 + in[4]; out[5] = x5 + in[5]; out[6] = x6 + in[6]; out[7] = x7 + in[7];
    out[8] = x8 + in[8]; out[9] = x9 + in[9]; out[10] = x10 + in[10]; out[11] = x11 + in[11];
    out[12] = x12 + in[12]; out[13] = x13 + in[13]; out[14] = x14 + in[14]; out[15] = x15 + in[15];
}

void chacha20_xor(uint8_t *buf, size_t len, const uint32_t key[8], const uint32_t nonce[3], uint32_t counter) {
    uint32_t state[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    uint32_t ks[16];
    for (int i = 0; i < 8; i++) state[4 + i] = key[i];
    state[13] = nonce[0]; state[14] = nonce[1]; state[15] = nonce[2];
    for (size_t off = 0; off < len; off += 64) {
        state[12] = counter++;
        chacha20_block(ks, state);
        for (size_t j = 0; j < 64 && off + j < len; j++)
            buf[off + j] ^= (uint8_t)(ks[j / 4] >> (8 * (j % 4)));
    }
}
