from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="ninja", version="1.13.2", language="c++", domain="build system", lines=17429,
    description="the Ninja build system's executable (ninja-upstream/src of the sdist; POSIX files, "
                "no tests, benchmarks or the Python-backed `browse` tool)",
    pypi="ninja", sha256="525bfa3fc88aa30a4467df270fd5be6f9fcae8061d54d4df74ea1dc5abd5a975",
    sources=("ninja-upstream/src/*.cc",),
    exclude=("ninja-upstream/src/*_test.cc", "ninja-upstream/src/*_perftest.cc",
             "ninja-upstream/src/*-win32.cc", "ninja-upstream/src/*.in.cc",
             "ninja-upstream/src/hash_collision_bench.cc", "ninja-upstream/src/browse.cc",
             "ninja-upstream/src/test.cc"),
    # no -I: the files include their neighbours by "name.h", and -Isrc would put the
    # bundled Windows getopt.h before the system one
    defines=("NDEBUG",),
    split="eval",
    programs=(Program("ninja", "executable", libs=("stdc++",)),),
)
