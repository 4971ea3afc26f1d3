/* A minimal test harness for the C API tests (C99 + POSIX), and model-side
 * helpers: a forked fake bitstream model and the Python model server.
 *
 * A test program defines its cases with TEST(name) and lists them with
 * TEST_LIST(...) / RUN_TESTS(argc, argv). Run without arguments it runs every
 * case; with a name it runs that case (ctest registers one entry per case). */
#ifndef MLBRIDGE_TESTS_C_TEST_H
#define MLBRIDGE_TESTS_C_TEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "mlbridge/mlbridge.h"

#ifdef __cplusplus
extern "C" {
#endif

extern int mlbt_failures;

#define TEST(name) static void test_##name(void)

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++mlbt_failures;                                                          \
    }                                                                           \
  } while (0)

#define FAIL(message)                                                  \
  do {                                                                 \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, (message));     \
    ++mlbt_failures;                                                   \
  } while (0)

/* Stops the current test case when `cond` is false. */
#define REQUIRE(cond)                                                             \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
      ++mlbt_failures;                                                            \
      return;                                                                     \
    }                                                                             \
  } while (0)

#define CHECK_INT_EQ(expected, actual)                                                                  \
  do {                                                                                                  \
    long long e_ = (long long)(expected), a_ = (long long)(actual);                                     \
    if (e_ != a_) {                                                                                     \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #expected, #actual, \
              e_, a_);                                                                                  \
      ++mlbt_failures;                                                                                  \
    }                                                                                                   \
  } while (0)

#define CHECK_STR_EQ(expected, actual)                                                                     \
  do {                                                                                                     \
    const char* e_ = (expected);                                                                           \
    const char* a_ = (actual);                                                                             \
    if (!e_ || !a_ || strcmp(e_, a_) != 0) {                                                               \
      fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #expected, #actual, \
              e_ ? e_ : "(null)", a_ ? a_ : "(null)");                                                     \
      ++mlbt_failures;                                                                                     \
    }                                                                                                      \
  } while (0)

/* `haystack` contains `needle`. */
#define CHECK_CONTAINS(haystack, needle)                                                                  \
  do {                                                                                                    \
    const char* h_ = (haystack);                                                                          \
    if (!h_ || !strstr(h_, (needle))) {                                                                   \
      fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, h_ ? h_ : "(null)", \
              (needle));                                                                                  \
      ++mlbt_failures;                                                                                    \
    }                                                                                                     \
  } while (0)

/* A runner call returns `expected`; prints the runner's message if not. */
#define CHECK_RUNNER(expected, r, call)                                                                     \
  do {                                                                                                      \
    mlb_status s_ = (call);                                                                                 \
    if (s_ != (expected)) {                                                                                 \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__, #call,               \
              mlb_status_name(s_), mlb_status_name(expected), mlb_runner_last_error(r));                    \
      ++mlbt_failures;                                                                                      \
    } else if (s_ != MLB_OK && mlb_runner_last_error(r)[0] == '\0') {                                       \
      fprintf(stderr, "%s:%d: %s failed with an empty message\n", __FILE__, __LINE__, #call);              \
      ++mlbt_failures;                                                                                      \
    }                                                                                                       \
  } while (0)
#define CHECK_RUNNER_OK(r, call) CHECK_RUNNER(MLB_OK, r, call)

/* A call with an `mlb_error** error` parameter: pass &err as that argument. */
#define CHECK_ERR_CALL(expected, call, err)                                                                    \
  do {                                                                                                         \
    mlb_status s_ = (call);                                                                                    \
    if (s_ != (expected)) {                                                                                    \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__, #call,                  \
              mlb_status_name(s_), mlb_status_name(expected), mlb_error_message(err));                         \
      ++mlbt_failures;                                                                                         \
    }                                                                                                          \
  } while (0)

typedef struct {
  const char* name;
  void (*fn)(void);
  const char* skipped; /* why a case compiled out of this build does not run (fn is NULL) */
} mlbt_case;

#define TEST_CASE(name) {#name, test_##name, NULL}
/* A TEST() compiled out of this build: ctest registers every TEST() of the
   source, so the case is listed, with the reason it is skipped. A name in no
   entry at all fails (a typo, a case missing from the table). */
#define SKIPPED_CASE(name, reason) {#name, NULL, reason}
#define RUN_TESTS(argc, argv, cases) mlbt_run((argc), (argv), (cases), sizeof(cases) / sizeof((cases)[0]))
int mlbt_run(int argc, char** argv, const mlbt_case* cases, size_t count);

/* Milliseconds on a monotonic clock. */
double mlbt_now_ms(void);

/* A private (0700) folder; `*base` is "DIR/chan" (no FIFOs yet). Free both
   with mlbt_channel_free, which also removes the folder and FIFOs. */
int mlbt_channel_new(char** dir, char** base);
void mlbt_channel_free(char* dir, char* base);
/* Creates BASE.in and BASE.out. */
int mlbt_make_fifos(const char* base);

/* A fake bitstream model in a forked child process. */
typedef enum {
  MLBT_ECHO,    /* replies to each observation with its feature bytes (cut or zero-padded) */
  MLBT_SILENT,  /* reads observations, never replies; exits when the compiler hangs up */
  MLBT_HANGUP,  /* exits at the first observation without replying */
  MLBT_LONG     /* replies with one byte more than the advice */
} mlbt_fake_mode;
/* `in_bytes`: feature bytes per observation; `out_bytes`: advice bytes. The
   child opens the FIFOs (which must exist) as the protocol says. */
pid_t mlbt_fake_model_start(const char* base, mlbt_fake_mode mode, size_t in_bytes, size_t out_bytes);

/* The Python model server (python -m mlbridge.testing.bench_model --model MODEL
   --format auto): started and waited for until it prints its ready line.
   -1 if it cannot start (the reason is printed). The interpreter is
   $MLBRIDGE_TEST_PYTHON, else python3. */
pid_t mlbt_python_model_start(const char* base, const char* model);
/* `python -m ARGS...` (NULL-terminated), waited for until it prints a line
   containing "ready", which is copied to `ready_line`; -1 on failure. */
pid_t mlbt_python_start(const char* const* args, char* ready_line, size_t capacity);

/* SIGKILL and reap; 0 is ignored. */
void mlbt_kill(pid_t pid);
/* SIGTERM and reap (a clean stop for the Python server). */
void mlbt_stop(pid_t pid);

/* One spec, or NULL (counted as a failure, with the message printed). */
mlb_spec* mlbt_spec(const char* name, mlb_dtype dtype, const int64_t* dims, size_t rank);

#ifdef __cplusplus
}
#endif

#endif /* MLBRIDGE_TESTS_C_TEST_H */
