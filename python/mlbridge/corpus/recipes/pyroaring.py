from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="pyroaring", version="1.2.0", language="c", domain="data structures (compressed bitmaps)",
    lines=33098, description="CRoaring: Roaring compressed bitmaps (the roaring.c amalgamation pyroaring bundles)",
    pypi="pyroaring", sha256="e33bf8fc8d8aad7373f62147cb5dbfaf0fdcf19af8069d034cd8ef4fb41a78af",
    sources=("pyroaring/roaring.c",), include=("pyroaring",),
    split="eval",
    programs=(Program("libroaring.so", "shared", exports=("roaring_*", "roaring64_*", "bitset_*"), libs=("m",)),),
)
