/* Test harness and model-side helpers for the C API tests (see c_test.h). */
#include "c_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int mlbt_failures = 0;

/* Bound on every read of the fake model and on the Python server's start:
   a broken test fails instead of hanging. */
enum { kIoTimeoutMs = 30000 };

int mlbt_run(int argc, char** argv, const mlbt_case* cases, size_t count) {
  size_t i;
  int ran = 0;
  signal(SIGPIPE, SIG_IGN); /* the library guards its own writes; this guards the helpers' */
  for (i = 0; i < count; ++i) {
    int before = mlbt_failures;
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    if (!cases[i].fn) {
      if (argc > 1) {
        /* compiled out of this build (SKIPPED_CASE): ctest's SKIP_RETURN_CODE */
        fprintf(stderr, "[SKIPPED] %s: %s\n", cases[i].name, cases[i].skipped);
        return 77;
      }
      continue;
    }
    ++ran;
    cases[i].fn();
    fprintf(stderr, "[%s] %s\n", mlbt_failures == before ? "  OK  " : "FAILED", cases[i].name);
  }
  if (ran == 0) {
    /* Unknown names used to be "skipped" (exit 77): a typo or a case left
       out of the table passed unseen (issue 26). */
    fprintf(stderr, "no test case named %s in this program\n", argc > 1 ? argv[1] : "(any)");
    return 2;
  }
  if (mlbt_failures) fprintf(stderr, "%d check(s) failed\n", mlbt_failures);
  return mlbt_failures ? 1 : 0;
}

double mlbt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static char* concat(const char* a, const char* b) {
  size_t la = strlen(a), lb = strlen(b);
  char* s = (char*)malloc(la + lb + 1);
  if (!s) return NULL;
  memcpy(s, a, la);
  memcpy(s + la, b, lb + 1);
  return s;
}

int mlbt_channel_new(char** dir, char** base) {
  mlb_error* err = NULL;
  *dir = NULL;
  *base = NULL;
  if (mlb_make_private_channel_dir(NULL, dir, &err) != MLB_OK) {
    fprintf(stderr, "cannot make a channel folder: %s\n", mlb_error_message(err));
    mlb_error_free(err);
    return 0;
  }
  *base = concat(*dir, "/chan");
  return *base != NULL;
}

void mlbt_channel_free(char* dir, char* base) {
  if (base) {
    char* in = concat(base, ".in");
    char* out = concat(base, ".out");
    if (in) unlink(in);
    if (out) unlink(out);
    free(in);
    free(out);
  }
  if (dir) rmdir(dir);
  mlb_string_free(dir);
  free(base);
}

int mlbt_make_fifos(const char* base) {
  char* in = concat(base, ".in");
  char* out = concat(base, ".out");
  int ok = in && out && mkfifo(in, 0600) == 0 && mkfifo(out, 0600) == 0;
  free(in);
  free(out);
  return ok;
}

/* ---- the fake bitstream model (child process) ---------------------------- */

/* Exactly n bytes; 0 on end of stream, error or timeout. */
static int read_exact(int fd, unsigned char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    struct pollfd p;
    ssize_t r;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, kIoTimeoutMs) <= 0) return 0;
    r = read(fd, buf + got, n - got);
    if (r == 0) return 0;
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return 0;
    }
    got += (size_t)r;
  }
  return 1;
}

/* One line including '\n', NUL-terminated; 0 at end of stream. */
static int read_line(int fd, char* line, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    unsigned char c;
    if (!read_exact(fd, &c, 1)) return 0;
    line[n++] = (char)c;
    if (c == '\n') {
      line[n] = '\0';
      return 1;
    }
  }
  return 0;
}

static int write_all(int fd, const unsigned char* buf, size_t n) {
  while (n) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 0;
    buf += w;
    n -= (size_t)w;
  }
  return 1;
}

static void fake_model_main(const char* base, mlbt_fake_mode mode, size_t in_bytes, size_t out_bytes) {
  static char line[1 << 16];
  char* in_path = concat(base, ".in");
  char* out_path = concat(base, ".out");
  unsigned char* obs = (unsigned char*)calloc(in_bytes + 1, 1);
  unsigned char* reply = (unsigned char*)calloc(out_bytes + 1, 1);
  int in_fd, out_fd;
  alarm(120); /* a safety net only: the parent always ends this process */
  if (!in_path || !out_path || !obs || !reply) _exit(10);
  /* protocol.md: BASE.in read-write, BASE.out read-only non-blocking. */
  in_fd = open(in_path, O_RDWR);
  out_fd = open(out_path, O_RDONLY | O_NONBLOCK);
  if (in_fd < 0 || out_fd < 0) _exit(11);
  if (!read_line(out_fd, line, sizeof line) || strncmp(line, "{\"features\":", 12) != 0) _exit(12);
  for (;;) {
    if (!read_line(out_fd, line, sizeof line)) _exit(0); /* the compiler ended the session */
    if (strncmp(line, "{\"context\":", 11) == 0) continue;
    if (strncmp(line, "{\"observation\":", 15) != 0) _exit(13);
    if (!read_exact(out_fd, obs, in_bytes + 1) || obs[in_bytes] != '\n') _exit(14);
    switch (mode) {
      case MLBT_ECHO:
      case MLBT_LONG:
        memset(reply, 0, out_bytes + 1);
        memcpy(reply, obs, in_bytes < out_bytes ? in_bytes : out_bytes);
        if (!write_all(in_fd, reply, out_bytes + (mode == MLBT_LONG ? 1 : 0))) _exit(15);
        break;
      case MLBT_SILENT: break;
      case MLBT_HANGUP: _exit(0);
    }
  }
}

pid_t mlbt_fake_model_start(const char* base, mlbt_fake_mode mode, size_t in_bytes, size_t out_bytes) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  if (pid == 0) {
    fake_model_main(base, mode, in_bytes, out_bytes);
    _exit(0);
  }
  if (pid < 0) perror("fork");
  return pid;
}

/* ---- the Python model server ----------------------------------------------- */

pid_t mlbt_python_start(const char* const* args, char* ready_line, size_t capacity) {
  const char* python = getenv("MLBRIDGE_TEST_PYTHON");
  char line[4096];
  const char* argv[32];
  size_t n = 0, argc = 0;
  int fds[2];
  pid_t pid;
  double deadline = mlbt_now_ms() + kIoTimeoutMs;
  if (!python || !*python) python = "python3";
  argv[argc++] = python;
  argv[argc++] = "-m";
  while (*args && argc + 1 < sizeof argv / sizeof argv[0]) argv[argc++] = *args++;
  argv[argc] = NULL;
  if (pipe(fds) != 0) {
    perror("pipe");
    return -1;
  }
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    perror("fork");
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execvp(python, (char* const*)argv);
    _exit(127);
  }
  close(fds[1]);
  /* The ready line says the server listens: waiting for it is the
     synchronization (no sleeps). */
  for (;;) {
    struct pollfd p;
    ssize_t r;
    int left = (int)(deadline - mlbt_now_ms());
    if (left <= 0 || n + 1 >= sizeof line) break;
    p.fd = fds[0];
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, left) <= 0) break;
    r = read(fds[0], line + n, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (line[n++] == '\n') {
      line[n] = '\0';
      if (strstr(line, "\"ready\"")) {
        close(fds[0]);
        if (ready_line && capacity) {
          strncpy(ready_line, line, capacity - 1);
          ready_line[capacity - 1] = '\0';
        }
        return pid;
      }
      n = 0;
    }
  }
  fprintf(stderr, "%s -m %s did not get ready; PYTHONPATH=%s\n", python, argv[2],
          getenv("PYTHONPATH") ? getenv("PYTHONPATH") : "");
  close(fds[0]);
  mlbt_kill(pid);
  return -1;
}

pid_t mlbt_python_model_start(const char* base, const char* model) {
  const char* args[] = {"mlbridge.testing.bench_model", "--base", NULL, "--model", NULL, "--format", "auto",
                        "--idle-timeout", "120", NULL};
  args[2] = base;
  args[4] = model;
  return mlbt_python_start(args, NULL, 0);
}

static void reap(pid_t pid, int sig) {
  int status;
  if (pid <= 0) return;
  kill(pid, sig);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void mlbt_kill(pid_t pid) { reap(pid, SIGKILL); }
void mlbt_stop(pid_t pid) { reap(pid, SIGTERM); }

mlb_spec* mlbt_spec(const char* name, mlb_dtype dtype, const int64_t* dims, size_t rank) {
  mlb_spec* s = NULL;
  mlb_error* err = NULL;
  if (mlb_spec_create(name, dtype, dims, rank, &s, &err) != MLB_OK) {
    fprintf(stderr, "mlb_spec_create(%s): %s\n", name, mlb_error_message(err));
    mlb_error_free(err);
    ++mlbt_failures;
    return NULL;
  }
  return s;
}
