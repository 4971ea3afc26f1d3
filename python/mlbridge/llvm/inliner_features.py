"""LLVM 19's ML inliner contract (llvm/Analysis/InlineModelFeatureMaps.h): the 38
int64 [1] features MLInlineAdvisor sends for each call site, in FeatureMap order,
and the int64 [1] decision it reads back. A policy exported with these input names
runs in the mlbridge LLVM plugin's in-process runners."""

#: 25 cost features (InlineCostFeatureIndex), then 13 others.
FEATURES = (
    "sroa_savings", "sroa_losses", "load_elimination", "call_penalty", "call_argument_setup",
    "load_relative_intrinsic", "lowered_call_arg_setup", "indirect_call_penalty", "jump_table_penalty",
    "case_cluster_penalty", "switch_default_dest_penalty", "switch_penalty",
    "unsimplified_common_instructions", "num_loops", "dead_blocks", "simplified_instructions",
    "constant_args", "constant_offset_ptr_args", "callsite_cost", "cold_cc_penalty",
    "last_call_to_static_bonus", "is_multiple_blocks", "nested_inlines", "nested_inline_cost_estimate",
    "threshold",
    "callee_basic_block_count", "callsite_height", "node_count", "nr_ctant_params", "cost_estimate",
    "edge_count", "caller_users", "caller_conditionally_executed_blocks", "caller_basic_block_count",
    "callee_conditionally_executed_blocks", "callee_users", "is_callee_avail_external",
    "is_caller_avail_external",
)
#: the advice the compiler reads
DECISION = "inlining_decision"
#: the default heuristic's decision, as LLVM logs it next to the features
DEFAULT_DECISION = "inlining_default"
