"""Benchmarks of what a policy does to programs, beyond what a corpus scores
(ml-compiler-opt keeps its own in ``benchmark/``): ``speed_check`` builds real
programs with the default register-allocation eviction and with a policy, and
compares how many instructions they execute and how long they run."""
