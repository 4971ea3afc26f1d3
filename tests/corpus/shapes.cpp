// C++ module for the corpus: templates, virtual calls and small member functions,
// the code where inlining decides most of the size. No standard library headers,
// so it compiles in a fraction of a second.
namespace corpus {

template <typename T, int N>
struct SmallVec {
  T items[N];
  int n = 0;
  bool push(const T &v) {
    if (n == N) return false;
    items[n++] = v;
    return true;
  }
  T &operator[](int i) { return items[i]; }
  int size() const { return n; }
  template <typename F>
  void sort(F less) {
    for (int i = 1; i < n; ++i)
      for (int j = i; j > 0 && less(items[j], items[j - 1]); --j) {
        T t = items[j];
        items[j] = items[j - 1];
        items[j - 1] = t;
      }
  }
};

struct Shape {
  virtual ~Shape() {}
  virtual long area() const = 0;
  virtual long perimeter() const = 0;
  virtual int kind() const = 0;
};

struct Rect : Shape {
  long w, h;
  Rect(long w_, long h_) : w(w_), h(h_) {}
  long area() const override { return w * h; }
  long perimeter() const override { return 2 * (w + h); }
  int kind() const override { return 1; }
};

struct Square : Rect {
  explicit Square(long s) : Rect(s, s) {}
  int kind() const override { return 2; }
};

struct Tri : Shape {
  long a, b, c;
  Tri(long a_, long b_, long c_) : a(a_), b(b_), c(c_) {}
  long area() const override {        // twice the area of a right triangle with legs a, b
    return a * b;
  }
  long perimeter() const override { return a + b + c; }
  int kind() const override { return 3; }
};

template <typename S>
long total(SmallVec<S *, 16> &v, long (Shape::*m)() const) {
  long t = 0;
  for (int i = 0; i < v.size(); ++i) t += (v[i]->*m)();
  return t;
}

}  // namespace corpus

extern "C" long shapes_score(const long *dims, int n) {
  using namespace corpus;
  static Rect rects[16] = {Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0),
                           Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0),
                           Rect(0, 0), Rect(0, 0), Rect(0, 0), Rect(0, 0)};
  SmallVec<Shape *, 16> shapes;
  for (int i = 0; i + 1 < n && i / 2 < 16; i += 2) {
    rects[i / 2] = Rect(dims[i], dims[i + 1]);
    shapes.push(&rects[i / 2]);
  }
  shapes.sort([](Shape *x, Shape *y) { return x->area() < y->area(); });
  long score = total(shapes, &Shape::area) * 3 + total(shapes, &Shape::perimeter);
  for (int i = 0; i < shapes.size(); ++i) score += shapes[i]->kind();
  Square sq(n);
  Tri tr(3, 4, 5);
  return score + sq.area() + tr.perimeter();
}
