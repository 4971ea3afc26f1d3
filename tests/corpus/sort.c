/* Sorting module: insertion sort, heap sort, quicksort (recursive) and a
 * bottom-up merge sort, all built from small static helpers. */
#include <stddef.h>

static void swap_int(int *a, int *b) { int t = *a; *a = *b; *b = t; }
static int less(int a, int b) { return a < b; }
static int min_int(int a, int b) { return a < b ? a : b; }

static void insertion_sort(int *v, int n) {
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && less(v[j], v[j - 1]); --j) swap_int(&v[j], &v[j - 1]);
}

static void sift_down(int *v, int start, int end) {
  int root = start;
  while (2 * root + 1 <= end) {
    int child = 2 * root + 1, best = root;
    if (less(v[best], v[child])) best = child;
    if (child + 1 <= end && less(v[best], v[child + 1])) best = child + 1;
    if (best == root) return;
    swap_int(&v[root], &v[best]);
    root = best;
  }
}

static void heap_sort(int *v, int n) {
  for (int s = (n - 2) / 2; s >= 0; --s) sift_down(v, s, n - 1);
  for (int e = n - 1; e > 0; --e) { swap_int(&v[0], &v[e]); sift_down(v, 0, e - 1); }
}

static int median3(int *v, int lo, int hi) {
  int mid = lo + (hi - lo) / 2;
  if (less(v[mid], v[lo])) swap_int(&v[mid], &v[lo]);
  if (less(v[hi], v[lo])) swap_int(&v[hi], &v[lo]);
  if (less(v[hi], v[mid])) swap_int(&v[hi], &v[mid]);
  return v[mid];
}

static int partition(int *v, int lo, int hi) {
  int p = median3(v, lo, hi), i = lo - 1, j = hi + 1;
  for (;;) {
    do ++i; while (less(v[i], p));
    do --j; while (less(p, v[j]));
    if (i >= j) return j;
    swap_int(&v[i], &v[j]);
  }
}

static void quick_sort(int *v, int lo, int hi) {
  while (hi - lo > 16) {
    int p = partition(v, lo, hi);
    quick_sort(v, lo, p);
    lo = p + 1;
  }
  insertion_sort(v + lo, hi - lo + 1);
}

static void merge(const int *src, int *dst, int lo, int mid, int hi) {
  int i = lo, j = mid, k = lo;
  while (i < mid && j < hi) dst[k++] = less(src[j], src[i]) ? src[j++] : src[i++];
  while (i < mid) dst[k++] = src[i++];
  while (j < hi) dst[k++] = src[j++];
}

static void merge_sort(int *v, int *tmp, int n) {
  int *src = v, *dst = tmp;
  for (int w = 1; w < n; w *= 2) {
    for (int lo = 0; lo < n; lo += 2 * w) merge(src, dst, lo, min_int(lo + w, n), min_int(lo + 2 * w, n));
    int *t = src; src = dst; dst = t;
  }
  if (src != v)
    for (int i = 0; i < n; ++i) v[i] = src[i];
}

static int is_sorted(const int *v, int n) {
  for (int i = 1; i < n; ++i)
    if (less(v[i], v[i - 1])) return 0;
  return 1;
}

int sort_demo(int *v, int *tmp, int n, int which) {
  switch (which & 3) {
    case 0: insertion_sort(v, n); break;
    case 1: heap_sort(v, n); break;
    case 2: quick_sort(v, 0, n - 1); break;
    default: merge_sort(v, tmp, n); break;
  }
  return is_sorted(v, n);
}
