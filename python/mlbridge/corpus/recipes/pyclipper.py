from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="pyclipper", version="1.4.0", language="c++", domain="geometry (polygon clipping)", lines=5047,
    description="Angus Johnson's Clipper: polygon clipping and offsetting (pyclipper's bundled clipper.cpp)",
    pypi="pyclipper", sha256="9882bd889f27da78add4dd6f881d25697efc740bf840274e749988d25496c8e1",
    sources=("src/clipper.cpp",), include=("src",),
    split="eval",
    programs=(Program("libpolyclipping.so", "shared", exports=("_ZN10ClipperLib*",), libs=("stdc++", "m")),),
)
