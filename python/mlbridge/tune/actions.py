"""The steps a pass order is made of: named groups of LLVM passes, as textual
new-pass-manager pipelines.

Entries 0-14 are the phase-ordering pass's action table
(integrations/llvm/phase_ordering_actions.cc, POSET-RL style groups of -Oz's
passes; a test checks they match). The tuner adds steps that -Oz's pipeline
lacks or spells differently (function merging, argument promotion, sinking,
switches kept as branches) and -Oz's whole pipeline as one step, so a search can
start from it. Append only: tuning files store pipelines as text, and orders in
checkpoints are indices into this table.
"""
from __future__ import annotations

from typing import List, NamedTuple, Sequence


class PassStep(NamedTuple):
    name: str
    pipeline: str


# instcombine is spelled <no-verify-fixpoint>, as default<Oz> does: a textual
# instcombine in LLVM 19 aborts the compiler when one iteration does not reach
# a fixpoint (docs/phase-ordering.md).
STEPS: List[PassStep] = [
    PassStep("sroa-cse-cfg", "function(sroa<modify-cfg>,early-cse<memssa>,simplifycfg)"),
    PassStep("instcombine-cfg", "function(instcombine<no-verify-fixpoint>,simplifycfg)"),
    PassStep("slp-vectorize", "function(slp-vectorizer,vector-combine,instcombine<no-verify-fixpoint>)"),
    PassStep("inline-simplify", "cgscc(function-attrs,inline,function(sroa<modify-cfg>,early-cse<memssa>,simplifycfg,"
                            "instcombine<no-verify-fixpoint>))"),
    PassStep("licm-gvn", "function(loop-mssa(licm),gvn)"),
    PassStep("rotate-licm", "function(loop-mssa(loop-rotate<no-header-duplication>,licm<no-allowspeculation>),"
                        "simplifycfg)"),
    PassStep("loop-idiom-deletion", "function(loop(loop-idiom,indvars,loop-deletion))"),
    PassStep("jump-threading", "function(jump-threading,correlated-propagation,simplifycfg)"),
    PassStep("tailcall-dse-adce", "function(tailcallelim,dse,adce,simplifycfg)"),
    PassStep("reassociate", "function(reassociate,constraint-elimination,instcombine<no-verify-fixpoint>)"),
    PassStep("ipsccp-globals", "ipsccp,globalopt,globaldce"),
    PassStep("deadargelim", "deadargelim,elim-avail-extern,constmerge,function(instcombine<no-verify-fixpoint>)"),
    PassStep("sccp-bdce", "function(sccp,bdce,instcombine<no-verify-fixpoint>)"),
    PassStep("gvn-memcpyopt", "function(mldst-motion<no-split-footer-bb>,gvn,memcpyopt)"),
    PassStep("late-cfg", "function(loop-sink,instsimplify,div-rem-pairs,simplifycfg<forward-switch-cond;"
                     "switch-range-to-icmp;switch-to-lookup;no-keep-loops;hoist-common-insts;sink-common-insts>)"),
    # -- the tuner's own steps (not in the phase-ordering pass's table) --
    PassStep("mergefunc", "mergefunc"),
    PassStep("argpromotion", "cgscc(argpromotion,function-attrs)"),
    PassStep("gvn-sink", "function(gvn-sink,simplifycfg)"),
    PassStep("switch-branches-cfg", "function(simplifycfg<switch-range-to-icmp;no-switch-to-lookup;no-keep-loops;"
                                "hoist-common-insts;sink-common-insts>)"),
    PassStep("globals-cleanup", "globalopt,globaldce,constmerge,strip-dead-prototypes"),
    PassStep("aggressive-instcombine", "function(aggressive-instcombine,instcombine<no-verify-fixpoint>,simplifycfg)"),
    PassStep("rel-lookup-tables", "rel-lookup-table-converter"),
    PassStep("dse-memcpyopt", "function(dse,memcpyopt,instcombine<no-verify-fixpoint>)"),
    # LLVM's textual -Oz pipeline: parsing "default<Oz>" sets opt's tuning
    # options, so unlike clang -Oz it has no SLP vectorizer (step 2 adds one);
    # orders may build on it
    PassStep("oz", "default<Oz>"),
    # the full-LTO link's own pipeline: what ld.lld runs on the merged module of a
    # -flto -Oz build (clang passes -Oz to the link as --lto-O2; the functions
    # carry minsize). The whole pipeline of a program's search under --setting lto.
    PassStep("lto", "lto<O2>"),
]

#: entries shared with the phase-ordering pass (its kNumPhaseOrderActions)
PHASE_ORDER_ACTIONS = 15
OZ = next(i for i, s in enumerate(STEPS) if s.name == "oz")
LTO = next(i for i, s in enumerate(STEPS) if s.name == "lto")
#: the steps that are a whole pipeline: searches start from them, never draw them at random
WHOLE = frozenset({OZ, LTO})
INLINE = 3
#: steps whose output differs between two runs of the same compiler on the same
#: input (LLVM 19's gvn-sink after -Oz's pipeline: three compiles of zstd, three
#: objects). An order that holds one cannot give the same bytes twice, so the
#: search never proposes it and no policy ships it (kept in the table: append only).
UNSTABLE_PASSES = ("gvn-sink",)
UNSTABLE = frozenset(i for i, s in enumerate(STEPS) if any(p in s.pipeline for p in UNSTABLE_PASSES))
#: what the search draws from: every stable step but the LTO link's pipeline, which
#: only a program's search under LTO starts from (RANDOM_STEPS: no whole pipeline)
STABLE_STEPS = [i for i in range(len(STEPS)) if i not in UNSTABLE and i != LTO]
RANDOM_STEPS = [i for i in STABLE_STEPS if i not in WHOLE]


def stable(order: Sequence[int]) -> bool:
    """ORDER gives the same bytes every time (it has no UNSTABLE step)."""
    return not any(int(i) in UNSTABLE for i in order)


def stable_pipeline(text: str) -> bool:
    """A pipeline's text without an UNSTABLE_PASSES pass."""
    return not any(p in text for p in UNSTABLE_PASSES)


def pipeline_text(order: Sequence[int]) -> str:
    """The one textual pipeline that runs ORDER's steps in turn (each occurrence
    is its own pass object, so a step may repeat)."""
    if not order:
        raise ValueError("an empty order")
    for i in order:
        if not 0 <= int(i) < len(STEPS):
            raise ValueError(f"step {i} out of range [0, {len(STEPS)})")
    return ",".join(STEPS[int(i)].pipeline for i in order)


def order_names(order: Sequence[int]) -> str:
    return " ".join(STEPS[int(i)].name for i in order)
