/* A tiny dense matrix library: small static helpers, nested loops and
 * enough live values in the kernels to give the register allocator work. */
#include <stddef.h>

#define N 8

typedef struct { double v[N][N]; } mat;

static double get(const mat *m, int r, int c) { return m->v[r][c]; }
static void set(mat *m, int r, int c, double x) { m->v[r][c] = x; }
static double clampd(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

static void mat_zero(mat *m) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) set(m, r, c, 0.0);
}

static void mat_identity(mat *m) {
  mat_zero(m);
  for (int i = 0; i < N; ++i) set(m, i, i, 1.0);
}

static void mat_add(mat *out, const mat *a, const mat *b) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) set(out, r, c, get(a, r, c) + get(b, r, c));
}

static void mat_scale(mat *m, double k) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) set(m, r, c, get(m, r, c) * k);
}

static double dot_row_col(const mat *a, const mat *b, int r, int c) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int k = 0; k < N; k += 4) {
    s0 += get(a, r, k) * get(b, k, c);
    s1 += get(a, r, k + 1) * get(b, k + 1, c);
    s2 += get(a, r, k + 2) * get(b, k + 2, c);
    s3 += get(a, r, k + 3) * get(b, k + 3, c);
  }
  return (s0 + s1) + (s2 + s3);
}

static void mat_mul(mat *out, const mat *a, const mat *b) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) set(out, r, c, dot_row_col(a, b, r, c));
}

static void mat_transpose(mat *out, const mat *a) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) set(out, c, r, get(a, r, c));
}

static double mat_trace(const mat *m) {
  double t = 0;
  for (int i = 0; i < N; ++i) t += get(m, i, i);
  return t;
}

static double mat_norm1(const mat *m) {
  double best = 0;
  for (int c = 0; c < N; ++c) {
    double s = 0;
    for (int r = 0; r < N; ++r) {
      double x = get(m, r, c);
      s += x < 0 ? -x : x;
    }
    if (s > best) best = s;
  }
  return best;
}

/* 4x4 block kernel: sixteen accumulators live across the inner loop. */
static void mat_mul_block(mat *out, const mat *a, const mat *b, int r0, int c0) {
  double acc[4][4] = {{0}};
  for (int k = 0; k < N; ++k) {
    double a0 = get(a, r0, k), a1 = get(a, r0 + 1, k), a2 = get(a, r0 + 2, k), a3 = get(a, r0 + 3, k);
    double b0 = get(b, k, c0), b1 = get(b, k, c0 + 1), b2 = get(b, k, c0 + 2), b3 = get(b, k, c0 + 3);
    acc[0][0] += a0 * b0; acc[0][1] += a0 * b1; acc[0][2] += a0 * b2; acc[0][3] += a0 * b3;
    acc[1][0] += a1 * b0; acc[1][1] += a1 * b1; acc[1][2] += a1 * b2; acc[1][3] += a1 * b3;
    acc[2][0] += a2 * b0; acc[2][1] += a2 * b1; acc[2][2] += a2 * b2; acc[2][3] += a2 * b3;
    acc[3][0] += a3 * b0; acc[3][1] += a3 * b1; acc[3][2] += a3 * b2; acc[3][3] += a3 * b3;
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) set(out, r0 + i, c0 + j, clampd(acc[i][j], -1e9, 1e9));
}

static void mat_mul_blocked(mat *out, const mat *a, const mat *b) {
  for (int r = 0; r < N; r += 4)
    for (int c = 0; c < N; c += 4) mat_mul_block(out, a, b, r, c);
}

static void mat_power(mat *out, const mat *a, int n) {
  mat acc, base, tmp;
  mat_identity(&acc);
  base = *a;
  while (n > 0) {
    if (n & 1) { mat_mul(&tmp, &acc, &base); acc = tmp; }
    mat_mul_blocked(&tmp, &base, &base);
    base = tmp;
    n >>= 1;
  }
  *out = acc;
}

double matrix_demo(int seed) {
  mat a, b, c, t;
  for (int r = 0; r < N; ++r)
    for (int col = 0; col < N; ++col) {
      set(&a, r, col, (double)((r * 7 + col * 3 + seed) % 11) / 10.0);
      set(&b, r, col, (double)((r + col * 5 + seed) % 13) / 12.0);
    }
  mat_add(&c, &a, &b);
  mat_scale(&c, 0.5);
  mat_transpose(&t, &c);
  mat_mul(&c, &a, &t);
  mat_power(&b, &c, 3);
  return mat_trace(&b) + mat_norm1(&c);
}
