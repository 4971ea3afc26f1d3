/* String hashing and a small open-addressing hash set of strings. */
#include <stddef.h>
#include <stdint.h>

static size_t str_len(const char *s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

static int str_eq(const char *a, const char *b) {
  while (*a && *a == *b) { ++a; ++b; }
  return *a == *b;
}

static uint32_t fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) { h ^= (unsigned char)*s; h *= 16777619u; }
  return h;
}

static uint32_t djb2(const char *s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + (unsigned char)*s;
  return h;
}

static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t mix32(uint32_t h) {
  h ^= h >> 16; h *= 0x85ebca6bu;
  h ^= h >> 13; h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static uint32_t load32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* A murmur3-like hash: several values stay live in the main loop. */
static uint32_t murmurish(const char *s, uint32_t seed) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = str_len(s);
  uint32_t h = seed, c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint32_t k = load32(p + i);
    k *= c1; k = rotl32(k, 15); k *= c2;
    h ^= k; h = rotl32(h, 13); h = h * 5 + 0xe6546b64u;
  }
  uint32_t k = 0;
  switch (n & 3) {
    case 3: k ^= (uint32_t)p[i + 2] << 16; /* fall through */
    case 2: k ^= (uint32_t)p[i + 1] << 8;  /* fall through */
    case 1: k ^= p[i]; k *= c1; k = rotl32(k, 15); k *= c2; h ^= k;
  }
  return mix32(h ^ (uint32_t)n);
}

static uint32_t combined(const char *s) { return fnv1a(s) ^ rotl32(djb2(s), 7) ^ murmurish(s, 42); }

#define CAP 64
typedef struct { const char *slot[CAP]; int count; } strset;

static void set_init(strset *t) {
  for (int i = 0; i < CAP; ++i) t->slot[i] = 0;
  t->count = 0;
}

static int set_find(const strset *t, const char *s) {
  uint32_t i = combined(s) & (CAP - 1);
  for (int probes = 0; probes < CAP; ++probes, i = (i + 1) & (CAP - 1)) {
    if (!t->slot[i]) return -1;
    if (str_eq(t->slot[i], s)) return (int)i;
  }
  return -1;
}

static int set_insert(strset *t, const char *s) {
  if (t->count >= CAP - 1 || set_find(t, s) >= 0) return 0;
  uint32_t i = combined(s) & (CAP - 1);
  while (t->slot[i]) i = (i + 1) & (CAP - 1);
  t->slot[i] = s;
  t->count++;
  return 1;
}

uint32_t strhash_demo(const char **words, int n) {
  strset t;
  set_init(&t);
  uint32_t acc = 0;
  for (int i = 0; i < n; ++i) {
    acc += (uint32_t)set_insert(&t, words[i]);
    acc = rotl32(acc, 3) ^ murmurish(words[i], acc);
  }
  for (int i = 0; i < n; ++i) acc += (uint32_t)set_find(&t, words[i]);
  return acc ^ (uint32_t)t.count;
}
