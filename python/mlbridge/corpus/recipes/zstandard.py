from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="zstandard", version="0.25.0", language="c", domain="compression", lines=57478,
    description="Zstandard (the single-file zstd.c amalgamation python-zstandard bundles)",
    pypi="zstandard", sha256="7713e1179d162cf5c7906da876ec2ccb9c3a9dcbdffef0cc7f70c3667a205f0b",
    sources=("zstd/zstd.c",), include=("zstd",), defines=("ZSTD_MULTITHREAD",),
    split="eval",
    programs=(Program("libzstd.so", "shared", exports=("ZSTD_*", "ZDICT_*"), libs=("pthread",)),),
)
