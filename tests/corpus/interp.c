/* A tiny stack bytecode interpreter: one big dispatch loop calling many
 * small helpers, plus a recursive evaluator and a noinline trace hook. */
#include <stdint.h>

enum { OP_PUSH, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_DUP, OP_SWAP, OP_JZ, OP_JMP, OP_LOAD, OP_STORE, OP_CALL, OP_RET, OP_HALT };

typedef struct {
  int64_t stack[64];
  int64_t vars[16];
  int ret[16];
  int sp, rsp, pc;
  long steps;
} vm;

static long trace_count;
__attribute__((noinline)) static void trace(int pc, int op) { trace_count += pc ^ op; }

static void push(vm *m, int64_t v) { m->stack[m->sp++ & 63] = v; }
static int64_t pop(vm *m) { return m->stack[--m->sp & 63]; }
static int64_t peek(const vm *m) { return m->stack[(m->sp - 1) & 63]; }
static int64_t safe_div(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }

static void binop(vm *m, int op) {
  int64_t b = pop(m), a = pop(m), r;
  switch (op) {
    case OP_ADD: r = a + b; break;
    case OP_SUB: r = a - b; break;
    case OP_MUL: r = a * b; break;
    default: r = safe_div(a, b); break;
  }
  push(m, r);
}

static int fetch(vm *m, const int *code) { return code[m->pc++]; }

static int64_t run(vm *m, const int *code, int len) {
  m->sp = m->rsp = m->pc = 0;
  m->steps = 0;
  while (m->pc < len && m->steps < 100000) {
    int op = fetch(m, code);
    m->steps++;
    if ((m->steps & 1023) == 0) trace(m->pc, op);
    switch (op) {
      case OP_PUSH: push(m, fetch(m, code)); break;
      case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: binop(m, op); break;
      case OP_DUP: push(m, peek(m)); break;
      case OP_SWAP: { int64_t b = pop(m), a = pop(m); push(m, b); push(m, a); break; }
      case OP_JZ: { int t = fetch(m, code); if (pop(m) == 0) m->pc = t; break; }
      case OP_JMP: m->pc = fetch(m, code); break;
      case OP_LOAD: push(m, m->vars[fetch(m, code) & 15]); break;
      case OP_STORE: m->vars[fetch(m, code) & 15] = pop(m); break;
      case OP_CALL: { int t = fetch(m, code); m->ret[m->rsp++ & 15] = m->pc; m->pc = t; break; }
      case OP_RET: m->pc = m->ret[--m->rsp & 15]; break;
      case OP_HALT: return m->sp ? peek(m) : 0;
      default: return -1;
    }
  }
  return m->sp ? peek(m) : 0;
}

/* Expression trees evaluated recursively (a recursive call site). */
typedef struct node { int op; int64_t val; const struct node *l, *r; } node;

static int64_t eval(const node *n) {
  if (!n->l) return n->val;
  int64_t a = eval(n->l), b = eval(n->r);
  switch (n->op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    default: return safe_div(a, b);
  }
}

int64_t interp_demo(int n) {
  /* sum = 0; i = n; while (i) { sum += i * i; i -= 1; } */
  const int code[] = {OP_PUSH, 0, OP_STORE, 0, OP_PUSH, 0, OP_STORE, 1,
                      OP_LOAD, 1, OP_JZ, 30,
                      OP_LOAD, 0, OP_LOAD, 1, OP_DUP, OP_MUL, OP_ADD, OP_STORE, 0,
                      OP_LOAD, 1, OP_PUSH, 1, OP_SUB, OP_STORE, 1, OP_JMP, 8,
                      OP_LOAD, 0, OP_HALT};
  int prog[sizeof code / sizeof code[0]];
  for (unsigned i = 0; i < sizeof code / sizeof code[0]; ++i) prog[i] = code[i];
  prog[5] = n;
  vm m;
  int64_t r = run(&m, prog, (int)(sizeof prog / sizeof prog[0]));
  node k2 = {0, 2, 0, 0}, k3 = {0, 3, 0, 0}, k7 = {0, 7, 0, 0};
  node mul = {OP_MUL, 0, &k2, &k3}, sub = {OP_SUB, 0, &k7, &mul}, top = {OP_DIV, 0, &mul, &sub};
  return r + eval(&top) + trace_count;
}
