from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    # lines: counted by `corpus list`, since the files of the tree change
    name="tests", version="tree", language="c, c++", domain="CI (the files of tests/corpus)", lines=0,
    description="tests/corpus: small C programs and one C++ file; builds in seconds, no download",
    local="tests/corpus", sources=("*.c", "*.cpp"),
    split="train",
    # no main: one shared library of the files' entry points
    programs=(Program("libcorpus.so", "shared", exports=("*_demo", "shapes_score"), libs=("stdc++", "m")),),
)
