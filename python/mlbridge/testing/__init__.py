"""Test doubles shipped with the package: the models the C++ benchmarks and tests drive
(``bench_model`` over pipes and shared memory, ``grpc_models`` over gRPC)."""
