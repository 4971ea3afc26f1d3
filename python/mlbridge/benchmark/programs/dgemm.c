/* C += A * B with a 4x8 register tile of doubles: 16 two-wide accumulators
 * plus the A and B values in flight, more than SSE2's 16 xmm registers. */
#include <stddef.h>

void dgemm_4x8(size_t m, size_t n, size_t k, const double *a, const double *b, double *c) {
    for (size_t i = 0; i + 4 <= m; i += 4)
        for (size_t j = 0; j + 8 <= n; j += 8) {
            double acc[4][8] = {{0}};
            for (size_t p = 0; p < k; p++) {
                const double *bp = b + p * n + j;
                for (int r = 0; r < 4; r++) {
                    double av = a[(i + r) * k + p];
                    for (int s = 0; s < 8; s++) acc[r][s] += av * bp[s];
                }
            }
            for (int r = 0; r < 4; r++)
                for (int s = 0; s < 8; s++) c[(i + r) * n + j + s] += acc[r][s];
        }
}
