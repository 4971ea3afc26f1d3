// mlbridge_cxx.hpp: a header-only C++ wrapper over the C API (mlbridge.h).
//
// RAII owners for the C handles and typed helpers, for C++ code that wants
// the stable C ABI (a plugin loaded by a host built with another compiler or
// standard library, a library that must not expose C++ types) rather than the
// C++ API (mlbridge.hpp). C++11, no exceptions, no RTTI: every call returns
// an mlb_status, and messages come from Runner::lastError() or an Error.
//
//   mlb::Error err;
//   mlb::PipeOptions opts;
//   opts.base(channel).format(MLB_FORMAT_JSON).timeoutMs(1000);
//   std::vector<mlb::Spec> features, advice;
//   features.push_back(mlb::Spec::of<int64_t>("callee_users", {1}));
//   advice.push_back(mlb::Spec::of<int64_t>("inlining_decision", {1}));
//   mlb::Runner r = mlb::Runner::pipe(features, advice, opts, &err);
//   if (!r) return fallback(err.message());
//   r.set<int64_t>("callee_users", 42);
//   int64_t decision = 0;
//   if (r.evaluate() != MLB_OK || r.output(0, &decision) != MLB_OK) return fallback(r.lastError());
#ifndef MLBRIDGE_MLBRIDGE_CXX_HPP
#define MLBRIDGE_MLBRIDGE_CXX_HPP

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "mlbridge/mlbridge.h"

namespace mlb {

// ---- element types -----------------------------------------------------------

template <class T>
struct DTypeOf;  // no value: not an element type
#define MLB_CXX_DTYPE(T, D) \
  template <>               \
  struct DTypeOf<T> {       \
    static const mlb_dtype value = D; \
  };
MLB_CXX_DTYPE(float, MLB_DTYPE_FLOAT32)
MLB_CXX_DTYPE(double, MLB_DTYPE_FLOAT64)
MLB_CXX_DTYPE(int8_t, MLB_DTYPE_INT8)
MLB_CXX_DTYPE(uint8_t, MLB_DTYPE_UINT8)
MLB_CXX_DTYPE(int16_t, MLB_DTYPE_INT16)
MLB_CXX_DTYPE(uint16_t, MLB_DTYPE_UINT16)
MLB_CXX_DTYPE(int32_t, MLB_DTYPE_INT32)
MLB_CXX_DTYPE(uint32_t, MLB_DTYPE_UINT32)
MLB_CXX_DTYPE(int64_t, MLB_DTYPE_INT64)
MLB_CXX_DTYPE(uint64_t, MLB_DTYPE_UINT64)
MLB_CXX_DTYPE(bool, MLB_DTYPE_BOOL)
#undef MLB_CXX_DTYPE
static_assert(sizeof(bool) == 1, "MLB_DTYPE_BOOL is one byte");

// ---- errors ------------------------------------------------------------------

// Owns an mlb_error; pass out() as the `mlb_error** error` argument.
class Error {
 public:
  Error() = default;
  ~Error() { mlb_error_free(e_); }
  Error(Error&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Error& operator=(Error&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  Error(const Error&) = delete;
  Error& operator=(const Error&) = delete;

  bool ok() const { return e_ == nullptr; }
  mlb_status code() const { return mlb_error_code(e_); }
  const char* message() const { return mlb_error_message(e_); }
  // "INVALID_ARGUMENT: ..." or "OK".
  std::string toString() const { return ok() ? "OK" : std::string(mlb_status_name(code())) + ": " + message(); }
  void clear() {
    mlb_error_free(e_);
    e_ = nullptr;
  }
  mlb_error** out() {
    clear();
    return &e_;
  }

 private:
  mlb_error* e_ = nullptr;
};

namespace detail {
inline mlb_error** out(Error* e) { return e ? e->out() : nullptr; }
}  // namespace detail

// ---- specs -------------------------------------------------------------------

class Spec {
 public:
  Spec() = default;
  explicit Spec(mlb_spec* adopted) : s_(adopted) {}
  ~Spec() { mlb_spec_destroy(s_); }
  Spec(Spec&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Spec& operator=(Spec&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  Spec(const Spec& o) : s_(nullptr) {
    if (o.s_) (void)mlb_spec_clone(o.s_, &s_, nullptr);
  }
  Spec& operator=(const Spec& o) {
    Spec copy(o);
    std::swap(s_, copy.s_);
    return *this;
  }

  // An empty Spec (operator bool false) on error.
  static Spec create(const char* name, mlb_dtype dtype, std::initializer_list<int64_t> dims, Error* error = nullptr) {
    return create(name, dtype, std::vector<int64_t>(dims), error);
  }
  static Spec create(const char* name, mlb_dtype dtype, const std::vector<int64_t>& dims, Error* error = nullptr) {
    mlb_spec* s = nullptr;
    (void)mlb_spec_create(name, dtype, dims.empty() ? nullptr : dims.data(), dims.size(), &s, detail::out(error));
    return Spec(s);
  }
  template <class T>
  static Spec of(const char* name, std::initializer_list<int64_t> dims, Error* error = nullptr) {
    return create(name, DTypeOf<T>::value, dims, error);
  }
  static Spec fromJson(const std::string& json, Error* error = nullptr) {
    mlb_spec* s = nullptr;
    (void)mlb_spec_from_json(json.data(), json.size(), &s, detail::out(error));
    return Spec(s);
  }

  explicit operator bool() const { return s_ != nullptr; }
  const mlb_spec* get() const { return s_; }
  std::string name() const { return s_ ? mlb_spec_name(s_) : ""; }
  mlb_dtype dtype() const { return mlb_spec_dtype(s_); }
  std::vector<int64_t> dims() const {
    const int64_t* d = mlb_spec_dims(s_);
    return d ? std::vector<int64_t>(d, d + mlb_spec_rank(s_)) : std::vector<int64_t>();
  }
  size_t elementCount() const { return mlb_spec_element_count(s_); }
  std::string toJson() const {
    char* j = nullptr;
    if (!s_ || mlb_spec_to_json(s_, &j, nullptr) != MLB_OK) return std::string();
    std::string out(j);
    mlb_string_free(j);
    return out;
  }

 private:
  mlb_spec* s_ = nullptr;
};

// ---- pipe options ------------------------------------------------------------

// Setters chain; the first failing one is remembered and reported by
// Runner::pipe (status(), error()).
class PipeOptions {
 public:
  PipeOptions() { status_ = mlb_pipe_options_create(&o_, error_.out()); }
  ~PipeOptions() { mlb_pipe_options_destroy(o_); }
  PipeOptions(const PipeOptions&) = delete;
  PipeOptions& operator=(const PipeOptions&) = delete;

  PipeOptions& base(const std::string& base) { return apply(mlb_pipe_options_set_base(o_, base.c_str(), sink())); }
  PipeOptions& format(mlb_format f) { return apply(mlb_pipe_options_set_format(o_, f, sink())); }
  PipeOptions& timeoutMs(int32_t ms) { return apply(mlb_pipe_options_set_timeout_ms(o_, ms, sink())); }
  PipeOptions& connectTimeoutMs(int32_t ms) {
    return apply(mlb_pipe_options_set_connect_timeout_ms(o_, ms, sink()));
  }
  PipeOptions& createFifos(bool on) { return apply(mlb_pipe_options_set_create_fifos(o_, on ? 1 : 0, sink())); }
  PipeOptions& allowSharedFolder(bool on) {
    return apply(mlb_pipe_options_set_allow_shared_folder(o_, on ? 1 : 0, sink()));
  }
  PipeOptions& maxMessageBytes(uint64_t n) { return apply(mlb_pipe_options_set_max_message_bytes(o_, n, sink())); }

  mlb_status status() const { return status_; }
  const Error& error() const { return error_; }
  const mlb_pipe_options* get() const { return o_; }

 private:
  mlb_error** sink() { return status_ == MLB_OK ? error_.out() : nullptr; }
  PipeOptions& apply(mlb_status s) {
    if (status_ == MLB_OK) status_ = s;
    return *this;
  }
  mlb_pipe_options* o_ = nullptr;
  mlb_status status_ = MLB_OK;
  Error error_;
};

// ---- runners -----------------------------------------------------------------

class Runner {
 public:
  Runner() = default;
  // Takes ownership of a runner made by any kind's C constructor.
  explicit Runner(mlb_runner* adopted) : r_(adopted) {}
  ~Runner() { mlb_runner_destroy(r_); }
  Runner(Runner&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Runner& operator=(Runner&& o) noexcept {
    std::swap(r_, o.r_);
    return *this;
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // A pipe runner; an empty Runner (operator bool false) on error.
  static Runner pipe(const std::vector<Spec>& features, const std::vector<Spec>& advice, const PipeOptions& options,
                     Error* error = nullptr) {
    if (options.status() != MLB_OK) {
      if (error) *error->out() = mlb_error_new(options.error().code(), options.error().message());
      return Runner();
    }
    std::vector<const mlb_spec*> f = raw(features), a = raw(advice);
    mlb_runner* r = nullptr;
    (void)mlb_pipe_runner_create(f.data(), f.size(), a.data(), a.size(), options.get(), &r, detail::out(error));
    return Runner(r);
  }

  explicit operator bool() const { return r_ != nullptr; }
  mlb_runner* get() const { return r_; }
  mlb_runner* release() {
    mlb_runner* r = r_;
    r_ = nullptr;
    return r;
  }
  // Message of the last call ("" if it succeeded).
  const char* lastError() const { return mlb_runner_last_error(r_); }
  mlb_status lastStatus() const { return mlb_runner_last_status(r_); }

  // Inputs.
  template <class T>
  mlb_status set(const char* name, const T& value) {
    return mlb_runner_set_feature(r_, name, DTypeOf<T>::value, &value, 1);
  }
  template <class T>
  mlb_status set(const char* name, const std::vector<T>& values) {
    return mlb_runner_set_feature(r_, name, DTypeOf<T>::value, values.data(), values.size());
  }
  template <class T>
  mlb_status set(const char* name, const T* values, size_t count) {
    return mlb_runner_set_feature(r_, name, DTypeOf<T>::value, values, count);
  }
  mlb_status setString(const char* name, const std::string& value) {
    return mlb_runner_set_string(r_, name, value.data(), value.size());
  }
  mlb_status setStrings(const char* name, const std::vector<std::string>& values) {
    std::vector<const char*> p;
    std::vector<size_t> n;
    for (const std::string& s : values) {
      p.push_back(s.data());
      n.push_back(s.size());
    }
    return mlb_runner_set_strings(r_, name, p.data(), n.data(), values.size());
  }
  // Zero-copy view of input i; nullptr on a wrong T or index (see lastError()).
  template <class T>
  T* input(size_t i, size_t* count = nullptr) {
    void* p = nullptr;
    size_t bytes = 0;
    if (mlb_runner_input_data(r_, i, DTypeOf<T>::value, &p, &bytes) != MLB_OK) return nullptr;
    if (count) *count = bytes / sizeof(T);
    return static_cast<T*>(p);
  }

  mlb_status setContext(const char* name) { return mlb_runner_set_context(r_, name); }
  mlb_status evaluate() { return mlb_runner_evaluate(r_); }

  // Outputs: T must be the output's dtype and the buffer its element count.
  template <class T>
  mlb_status output(size_t i, T* out, size_t count = 1) {
    return mlb_runner_get_output(r_, i, DTypeOf<T>::value, out, count);
  }
  template <class T>
  mlb_status output(size_t i, std::vector<T>* out) {
    const mlb_spec* s = nullptr;
    mlb_status st = mlb_runner_output_spec(r_, i, &s);
    if (st != MLB_OK) return st;
    out->resize(mlb_spec_element_count(s));
    return mlb_runner_get_output(r_, i, DTypeOf<T>::value, out->data(), out->size());
  }
  template <class T>
  mlb_status outputByName(const char* name, T* out, size_t count = 1) {
    return mlb_runner_get_output_by_name(r_, name, DTypeOf<T>::value, out, count);
  }
  mlb_status outputString(size_t i, size_t element, std::string* out) {
    const char* p = nullptr;
    size_t n = 0;
    mlb_status st = mlb_runner_get_output_string(r_, i, element, &p, &n);
    if (st == MLB_OK) out->assign(p, n);
    return st;
  }

  mlb_status finish() { return mlb_runner_finish(r_); }

 private:
  static std::vector<const mlb_spec*> raw(const std::vector<Spec>& specs) {
    std::vector<const mlb_spec*> out;
    for (const Spec& s : specs) out.push_back(s.get());
    return out;
  }
  mlb_runner* r_ = nullptr;
};

}  // namespace mlb

#endif  // MLBRIDGE_MLBRIDGE_CXX_HPP
