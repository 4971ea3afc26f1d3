from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="lz4", version="4.4.5", language="c", domain="compression", lines=9783,
    description="LZ4 block, frame and HC compression, and xxHash (lz4libs/ of the sdist)",
    pypi="lz4", sha256="5f0b9e53c1e82e88c10d7c180069363980136b9d7a8306c4dca4f760d60c39f0",
    sources=("lz4libs/*.c",), include=("lz4libs",),
    split="eval",
    programs=(Program("liblz4.so", "shared", exports=("LZ4_*", "LZ4F_*")),),
)
