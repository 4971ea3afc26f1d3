from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="brotli", version="1.2.1", language="c", domain="compression", lines=41769,
    description="Google's Brotli compressor and decompressor (the C library and the brotli tool in the sdist)",
    pypi="brotli", sha256="02b2f7b5a83485efe448a44ddf7983def05c3bb1dcf917d4f7154070260e13de",
    sources=("c/common/*.c", "c/dec/*.c", "c/enc/*.c", "c/tools/brotli.c"), include=("c/include",),
    split="train",
    # what the project installs: the brotli tool and the encoder and decoder libraries
    # (each with the common part linked in, here, instead of libbrotlicommon.so)
    programs=(
        Program("brotli", "executable", libs=("m",)),
        Program("libbrotlienc.so", "shared", modules=("c/common/*", "c/enc/*"),
                exports=("BrotliEncoder*",), libs=("m",)),
        Program("libbrotlidec.so", "shared", modules=("c/common/*", "c/dec/*"), exports=("BrotliDecoder*",)),
    ),
)
