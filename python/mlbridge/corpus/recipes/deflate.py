from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="deflate", version="0.9.0", language="c", domain="compression", lines=15894,
    description="libdeflate: DEFLATE, zlib and gzip compression and checksums, and its gzip program "
                "(the libdeflate/ the `deflate` sdist bundles)",
    pypi="deflate", sha256="962e0a6f1ea3a94b900a8ea0ce138fa92bfcbafda5b86367104a259ffcd3462b",
    sources=("libdeflate/lib/*.c", "libdeflate/lib/x86/*.c", "libdeflate/programs/gzip.c",
             "libdeflate/programs/prog_util.c", "libdeflate/programs/tgetopt.c"),
    include=("libdeflate",),
    split="eval",
    programs=(
        Program("libdeflate.so", "shared", modules=("libdeflate/lib/*",), exports=("libdeflate_*",)),
        Program("libdeflate-gzip", "executable"),
    ),
)
