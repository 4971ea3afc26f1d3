/* Loops whose unrolling is visible in the generated code: constant trip
 * counts that 4 divides (scale, saxpy), one it does not (odd), an unknown
 * one (sum), and a nest (clear2d). */
void scale(double *a, double k) {
  for (int i = 0; i < 100; ++i) a[i] *= k;
}

void saxpy(float *restrict y, const float *restrict x, float a) {
  for (int i = 0; i < 64; ++i) y[i] += a * x[i];
}

void odd(double *a, double k) {
  for (int i = 0; i < 99; ++i) a[i] *= k;
}

int sum(const int *a, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += a[i];
  return s;
}

void clear2d(int m[16][12]) {
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 12; ++c) m[r][c] = r ^ c;
}

int no_loops(int x) { return x * 3 + 1; }
