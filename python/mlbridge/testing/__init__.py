"""Test doubles shipped with the package: the models the C++ benchmarks and tests drive."""
