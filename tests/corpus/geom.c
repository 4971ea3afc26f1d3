/* 3-D geometry: vector helpers and a ray/sphere/triangle tracer with many
 * floating-point temporaries live at once (register pressure). */
typedef struct { float x, y, z; } vec3;

static vec3 v3(float x, float y, float z) { vec3 r = {x, y, z}; return r; }
static vec3 add(vec3 a, vec3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static vec3 sub(vec3 a, vec3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static vec3 scale(vec3 a, float k) { return v3(a.x * k, a.y * k, a.z * k); }
static float dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static vec3 cross(vec3 a, vec3 b) { return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x); }
static float sqrt_approx(float x) {
  if (x <= 0) return 0;
  float r = x > 1 ? x : 1;
  for (int i = 0; i < 8; ++i) r = 0.5f * (r + x / r);
  return r;
}
static vec3 normalize(vec3 a) {
  float n = sqrt_approx(dot(a, a));
  return n > 0 ? scale(a, 1.0f / n) : a;
}

static float hit_sphere(vec3 o, vec3 d, vec3 c, float r) {
  vec3 oc = sub(o, c);
  float b = dot(oc, d), q = dot(oc, oc) - r * r, disc = b * b - q;
  if (disc < 0) return -1;
  float s = sqrt_approx(disc), t = -b - s;
  return t > 1e-4f ? t : -b + s;
}

/* Moller-Trumbore: about twenty floats are live in the middle. */
static float hit_triangle(vec3 o, vec3 d, vec3 a, vec3 b, vec3 c) {
  vec3 e1 = sub(b, a), e2 = sub(c, a), p = cross(d, e2);
  float det = dot(e1, p);
  if (det > -1e-6f && det < 1e-6f) return -1;
  float inv = 1.0f / det;
  vec3 t = sub(o, a);
  float u = dot(t, p) * inv;
  if (u < 0 || u > 1) return -1;
  vec3 q = cross(t, e1);
  float v = dot(d, q) * inv;
  if (v < 0 || u + v > 1) return -1;
  return dot(e2, q) * inv;
}

static float shade(vec3 n, vec3 l, vec3 view, float shininess) {
  float diff = dot(n, l);
  if (diff < 0) diff = 0;
  vec3 h = normalize(add(l, view));
  float spec = dot(n, h);
  if (spec < 0) spec = 0;
  float p = 1;
  for (int i = 0; i < (int)shininess; ++i) p *= spec;
  return 0.1f + 0.7f * diff + 0.2f * p;
}

float geom_demo(int w, int h) {
  vec3 eye = v3(0, 0, -3), light = normalize(v3(1, 1, -1));
  vec3 c0 = v3(0, 0, 0), c1 = v3(1.2f, 0.3f, 0.5f);
  vec3 ta = v3(-2, -1, 1), tb = v3(2, -1, 1), tc = v3(0, 2, 1.5f);
  float total = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      vec3 d = normalize(v3((x - w / 2.0f) / w, (y - h / 2.0f) / h, 1));
      float t0 = hit_sphere(eye, d, c0, 1), t1 = hit_sphere(eye, d, c1, 0.5f), t2 = hit_triangle(eye, d, ta, tb, tc);
      float best = 1e30f;
      vec3 n = v3(0, 0, 0);
      if (t0 > 0 && t0 < best) { best = t0; n = normalize(sub(add(eye, scale(d, t0)), c0)); }
      if (t1 > 0 && t1 < best) { best = t1; n = normalize(sub(add(eye, scale(d, t1)), c1)); }
      if (t2 > 0 && t2 < best) { best = t2; n = normalize(cross(sub(tb, ta), sub(tc, ta))); }
      if (best < 1e30f) total += shade(n, light, scale(d, -1), 8);
    }
  return total;
}
