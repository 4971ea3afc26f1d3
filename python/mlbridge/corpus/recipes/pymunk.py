from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="pymunk", version="7.3.1", language="c", domain="physics (2D rigid bodies)", lines=15062,
    description="Munk2D, pymunk's fork of the Chipmunk2D physics engine (Munk2D/src of the sdist)",
    pypi="pymunk", sha256="d36f10ac78355b5f4798d5b17e32100a1a1230258b1f37008f778ece72ddb719",
    sources=("Munk2D/src/*.c",), include=("Munk2D/include",),
    split="train",
    programs=(Program("libchipmunk.so", "shared", exports=("cp*",), libs=("m", "pthread")),),
)
