from .recipe import Recipe

RECIPE = Recipe(
    name="tests", version="tree", language="c, c++", domain="CI (the files of tests/corpus)", lines=604,
    description="tests/corpus: small C programs and one C++ file; builds in seconds, no download",
    local="tests/corpus", sources=("*.c", "*.cpp"),
)
