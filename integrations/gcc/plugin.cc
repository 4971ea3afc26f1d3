// The mlbridge GCC plugin: a model picks the unroll factor of every loop.
//
//   gcc -O2 -fplugin=mlbridge_gcc.so -fplugin-arg-mlbridge-model=policy.onnx x.c
//   gcc -O2 -fplugin=mlbridge_gcc.so -fplugin-arg-mlbridge-pipe=BASE x.c
//
// A GIMPLE pass right after "loopinit" (loops normalized, scalar evolutions
// ready) computes each loop's features, asks the model through the C API
// (advisor.h) and sets loop->unroll: the same hint `#pragma GCC unroll N`
// gives, honoured by GCC's complete and RTL unrollers. Any failure is a
// warning and leaves the loop as GCC would have it; the plugin never stops
// the compilation. docs/gcc-plugin.md is the guide.
#include <string>

#include "advisor.h"
#include "decision_log.h"

// GCC's headers come last: system.h poisons identifiers the C++ library uses.
#include "gcc-plugin.h"
#include "plugin-version.h"
#include "tree.h"
#include "tree-pass.h"
#include "context.h"
#include "function.h"
#include "basic-block.h"
#include "cfgloop.h"
#include "gimple.h"
#include "gimple-iterator.h"
#include "tree-scalar-evolution.h"
#include "diagnostic-core.h"

// The two symbols GCC looks up; everything else stays hidden in the plugin.
__attribute__((visibility("default"))) int plugin_is_GPL_compatible;

namespace mlbridge_gcc {
namespace {

const char* const kPluginName = "mlbridge";

// One compilation (one cc1 process) = one model session, opened at the first
// loop so that a file without loops never waits for a model.
struct PluginState {
  Options options;
  Advisor advisor;
  DecisionLog log;
  bool tried = false;     // open() was attempted
  std::string openError;  // why there is no model, if open() failed

  bool ensureOpen() {
    if (!tried) {
      tried = true;
      if (!advisor.open(options, &openError))
        warning(0, "%s: no decisions, loops left unchanged: %s", kPluginName, openError.c_str());
    }
    return advisor.isOpen();
  }
};

PluginState& state() {
  static PluginState s;
  return s;
}

int lineOf(const class loop* l) {
  for (basic_block bb : {l->header, l->latch}) {
    if (bb == nullptr) continue;
    for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi)) {
      location_t loc = gimple_location(gsi_stmt(gsi));
      if (loc != UNKNOWN_LOCATION) return LOCATION_LINE(loc);
    }
  }
  return 0;
}

// Iterations when GCC proves a constant count, else -1.
int64_t tripCount(class loop* l) {
  if (!scev_initialized_p()) return -1;
  tree latch = number_of_latch_executions(l);
  if (latch == NULL_TREE || TREE_CODE(latch) != INTEGER_CST || !tree_fits_shwi_p(latch)) return -1;
  HOST_WIDE_INT n = tree_to_shwi(latch);
  return n >= 0 && n < HOST_WIDE_INT_MAX ? n + 1 : -1;
}

void countBody(class loop* l, int64_t (&f)[kFeatureCount]) {
  basic_block* body = get_loop_body(l);
  for (unsigned i = 0; i < l->num_nodes; ++i) {
    for (gimple_stmt_iterator gsi = gsi_start_bb(body[i]); !gsi_end_p(gsi); gsi_next(&gsi)) {
      gimple* stmt = gsi_stmt(gsi);
      if (is_gimple_debug(stmt)) continue;
      ++f[kLoopStmts];
      if (is_gimple_call(stmt))
        ++f[kLoopCalls];
      else if (gimple_vdef(stmt) != NULL_TREE)
        ++f[kLoopStores];
      else if (gimple_vuse(stmt) != NULL_TREE)
        ++f[kLoopLoads];
    }
  }
  free(body);
}

const pass_data kPassData = {
    GIMPLE_PASS,         // type
    "mlbridge_unroll",   // name (-fdump-tree-mlbridge_unroll)
    OPTGROUP_LOOP,       // optinfo_flags
    TV_NONE,             // tv_id
    PROP_cfg | PROP_ssa, // properties_required
    0,                   // properties_provided
    0,                   // properties_destroyed
    0,                   // todo_flags_start
    0,                   // todo_flags_finish
};

class UnrollAdvicePass : public gimple_opt_pass {
 public:
  explicit UnrollAdvicePass(gcc::context* ctx) : gimple_opt_pass(kPassData, ctx) {}
  unsigned int execute(function* fun) override;
};

unsigned int UnrollAdvicePass::execute(function* fun) {
  PluginState& s = state();
  if (loops_for_fn(fun) == nullptr || number_of_loops(fun) <= 1) return 0;

  // Function-wide features, shared by its loops.
  int64_t fnFeatures[kFeatureCount] = {};
  basic_block bb;
  FOR_EACH_BB_FN(bb, fun) {
    ++fnFeatures[kFnBlocks];
    for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi))
      if (!is_gimple_debug(gsi_stmt(gsi))) ++fnFeatures[kFnStmts];
  }
  for (class loop* l ATTRIBUTE_UNUSED : loops_list(fun, 0)) ++fnFeatures[kFnLoops];
  if (fnFeatures[kFnLoops] == 0) return 0;
  bool haveModel = s.ensureOpen();

  const char* fnName = function_name(fun);
  for (class loop* l : loops_list(fun, 0)) {
    LoopRecord r;
    r.file = main_input_filename != nullptr ? main_input_filename : "";
    r.function = fnName;
    r.line = lineOf(l);
    r.loop = l->num;
    for (int i = kFnBlocks; i < kFeatureCount; ++i) r.features[i] = fnFeatures[i];
    r.features[kTripCount] = tripCount(l);
    r.features[kLoopDepth] = loop_depth(l);
    r.features[kInnermost] = l->inner == nullptr ? 1 : 0;
    r.features[kLoopBlocks] = l->num_nodes;
    countBody(l, r.features);

    if (l->unroll != 0) {
      // The programmer's `#pragma GCC unroll` wins over the model.
      r.unroll = l->unroll;
      r.error = "kept #pragma GCC unroll " + std::to_string(l->unroll);
    } else if (!haveModel) {
      r.error = "no model: " + s.openError;
    } else if (!s.advisor.usable()) {
      r.error = "the model session ended after an earlier error";
    } else if (!s.advisor.decide(fnName, r.features, &r.unroll, &r.error)) {
      // Once per failure: a broken session sends later loops to the branch above.
      r.unroll = -1;
      warning_at(DECL_SOURCE_LOCATION(fun->decl), 0, "%s: loop %d of %qs left unchanged: %s", kPluginName, l->num,
                 fnName, r.error.c_str());
    } else if (r.unroll > 0) {
      // 1 = do not unroll; N > 1 = unroll N times (has_unroll opens the RTL
      // unroller's gate even without -funroll-loops). 0 = no hint.
      l->unroll = static_cast<unsigned short>(r.unroll);
      if (r.unroll > 1) fun->has_unroll = 1;
      r.applied = true;
    }
    s.log.write(r);
  }
  return 0;
}

void finish(void*, void*) {
  PluginState& s = state();
  std::string error;
  if (!s.advisor.close(&error)) warning(0, "%s: %s", kPluginName, error.c_str());
  if (!s.log.close(&error)) warning(0, "%s: %s", kPluginName, error.c_str());
}

plugin_info kInfo = {
    "0.1.0",
    "ML-guided loop unrolling through mlbridge's C API.\n"
    "  -fplugin-arg-mlbridge-model=FILE.onnx   built-in ONNX engine (runner onnx)\n"
    "  -fplugin-arg-mlbridge-pipe=BASE         model process on BASE.in/BASE.out (runner pipe)\n"
    "  -fplugin-arg-mlbridge-runner=onnx|pipe  -fplugin-arg-mlbridge-format=bitstream|json|protobuf\n"
    "  -fplugin-arg-mlbridge-timeout=MS        -fplugin-arg-mlbridge-max-unroll=N\n"
    "  -fplugin-arg-mlbridge-log=FILE          JSON lines, one per loop"};

}  // namespace
}  // namespace mlbridge_gcc

__attribute__((visibility("default"))) int plugin_init(struct plugin_name_args* info, struct plugin_gcc_version* version) {
  using namespace mlbridge_gcc;
  if (!plugin_default_version_check(version, &gcc_version)) {
    error("%s: built for GCC %s, loaded into GCC %s", kPluginName, gcc_version.basever, version->basever);
    return 1;
  }
  PluginState& s = state();
  for (int i = 0; i < info->argc; ++i) {
    std::string message;
    if (!setOption(s.options, info->argv[i].key, info->argv[i].value, &message)) {
      warning(0, "%s: %s; the plugin is off", kPluginName, message.c_str());
      return 0;
    }
  }
  if (!s.options.log.empty()) {
    std::string message;
    if (!s.log.open(s.options.log, &message)) warning(0, "%s: %s", kPluginName, message.c_str());
  }
  register_callback(info->base_name, PLUGIN_INFO, nullptr, &kInfo);
  struct register_pass_info pass;
  pass.pass = new UnrollAdvicePass(g);
  pass.reference_pass_name = "loopinit";
  pass.ref_pass_instance_number = 1;
  pass.pos_op = PASS_POS_INSERT_AFTER;
  register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, nullptr, &pass);
  register_callback(info->base_name, PLUGIN_FINISH, finish, nullptr);
  return 0;
}
