"""box2d-py's copy of Box2D 2.3 turns b2Assert into a Python exception (b2Settings.h
includes Python.h); ``prepare`` restores upstream's plain assert."""
import os

from ..programs import Program
from .recipe import Recipe


def _no_python(top: str) -> None:
    path = os.path.join(top, "Box2D", "Common", "b2Settings.h")
    with open(path) as f:
        text = f.read()
    if "#define USE_EXCEPTIONS\n" in text:
        with open(path, "w") as f:
            f.write(text.replace("#define USE_EXCEPTIONS\n", "", 1))


RECIPE = Recipe(
    name="box2d", version="2.3.8", language="c++", domain="physics (2D rigid bodies)", lines=28155,
    description="Box2D 2.3: 2D rigid-body physics, collision and joints (box2d-py's bundled C++ library)",
    pypi="box2d-py", sha256="bdacfbbc56079bb317548efe49d3d5a86646885cc27f4a2ee97e4b2960921ab7",
    sources=("Box2D/**/*.cpp",), include=(".",),
    prepare=_no_python,
    split="train",
    # libBox2D: its C++ classes (b2World, b2Body, ...) and the b2_version global
    programs=(Program("libBox2D.so", "shared", exports=("_Z*b2*", "b2_*"), libs=("stdc++", "m")),),
)
