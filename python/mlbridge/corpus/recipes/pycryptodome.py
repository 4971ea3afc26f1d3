from .recipe import Recipe

RECIPE = Recipe(
    name="pycryptodome", version="4.4.0", language="c", domain="cryptography", lines=35384,
    description="ciphers, hashes, elliptic curves, ML-KEM/ML-DSA (PyCryptodome's C core); "
                "the files that need ISA extensions (AES-NI, SHA-NI, AVX2, ARM) are left out",
    pypi="pycryptodome", sha256="eab7620c60c85f3fa251d026ec06e094f036d96187bebb9752e46fbcebabbb55",
    sources=("src/*.c",),
    exclude=("src/*armv8*", "src/*neon*", "src/*pmull*", "src/*_avx2*", "src/*shani*", "src/AESNI.c",
             "src/ghash_clmul.c", "src/ec_nat_bmi2_adx.c", "src/*_x4_*", "src/test*",
             # templates #included by the files that instantiate them
             "src/blake2.c", "src/block_common.c", "src/blowfish_init.c",
             "src/hash_SHA2_compress_portable.c", "src/hash_SHA2_template.c"),
    include=("src",), defines=("NO_CPYTHON_MODULE", "SYS_BITS=64", "HAVE_STDINT_H", "HAVE_POSIX_MEMALIGN"),
)
