/* A numeric kernel from a training-split project (pyerfa's liberfa): the
 * IAU 2006/2000A precession-nutation matrix (eraPnm06a: the 1,365-term
 * nutation series, many doubles live at once) for a run of dates, and a
 * checksum of the matrices. The speed check (benchmark/speed_check.py) builds
 * it with every liberfa source and compares its output with the reference. */
#include <stdio.h>
#include "erfa.h"

int main(void) {
  double sum = 0.0;
  for (int i = 0; i < 200; i++) {
    double rnpb[3][3];
    eraPnm06a(2400000.5, 51544.0 + 36.5 * i, rnpb);
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++)
        sum += rnpb[r][c] * (double)(3 * r + c + 1);
  }
  printf("erfa %.12f\n", sum);
  return 0;
}
