#include "phase_ordering_actions.h"

namespace mlbridge_llvm {

// instcombine is spelled <no-verify-fixpoint>: a textual "instcombine" in
// LLVM 19 verifies that one iteration reached a fixpoint and calls
// report_fatal_error otherwise (seen on tests/corpus/interp.c), which would
// kill the compiler. The default pipelines turn the check off the same way.
// Groups follow the -Oz pipeline (opt -passes='default<Oz>' -print-pipeline-passes),
// with its pass parameters where they matter for size.
static const PhaseOrderAction kActions[kNumPhaseOrderActions] = {
    {"sroa-cse-cfg", "function(sroa<modify-cfg>,early-cse<memssa>,simplifycfg)"},
    {"instcombine-cfg", "function(instcombine<no-verify-fixpoint>,simplifycfg)"},
    // clang enables the SLP vectorizer at -Oz (opt's default<Oz> does not): a size win on float code.
    {"slp-vectorize", "function(slp-vectorizer,vector-combine,instcombine<no-verify-fixpoint>)"},
    // As in -Oz: callees are simplified before their callers are considered.
    {"inline-simplify",
     "cgscc(function-attrs,inline,function(sroa<modify-cfg>,early-cse<memssa>,simplifycfg,"
     "instcombine<no-verify-fixpoint>))"},
    {"licm-gvn", "function(loop-mssa(licm),gvn)"},
    {"rotate-licm", "function(loop-mssa(loop-rotate<no-header-duplication>,licm<no-allowspeculation>),simplifycfg)"},
    {"loop-idiom-deletion", "function(loop(loop-idiom,indvars,loop-deletion))"},
    {"jump-threading", "function(jump-threading,correlated-propagation,simplifycfg)"},
    {"tailcall-dse-adce", "function(tailcallelim,dse,adce,simplifycfg)"},
    {"reassociate", "function(reassociate,constraint-elimination,instcombine<no-verify-fixpoint>)"},
    {"ipsccp-globals", "ipsccp,globalopt,globaldce"},
    {"deadargelim", "deadargelim,elim-avail-extern,constmerge,function(instcombine<no-verify-fixpoint>)"},
    {"sccp-bdce", "function(sccp,bdce,instcombine<no-verify-fixpoint>)"},
    {"gvn-memcpyopt", "function(mldst-motion<no-split-footer-bb>,gvn,memcpyopt)"},
    {"late-cfg",
     "function(loop-sink,instsimplify,div-rem-pairs,simplifycfg<forward-switch-cond;switch-range-to-icmp;"
     "switch-to-lookup;no-keep-loops;hoist-common-insts;sink-common-insts>)"},
};

const PhaseOrderAction* phaseOrderActions() { return kActions; }

}  // namespace mlbridge_llvm
