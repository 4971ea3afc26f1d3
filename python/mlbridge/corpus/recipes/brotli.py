from .recipe import Recipe

RECIPE = Recipe(
    name="brotli", version="1.2.1", language="c", domain="compression", lines=40210,
    description="Google's Brotli compressor and decompressor (the C library in the sdist)",
    pypi="brotli", sha256="02b2f7b5a83485efe448a44ddf7983def05c3bb1dcf917d4f7154070260e13de",
    sources=("c/common/*.c", "c/dec/*.c", "c/enc/*.c"), include=("c/include",),
)
