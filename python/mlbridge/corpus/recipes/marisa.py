from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="marisa", version="1.4.1", language="c++", domain="data structures (tries)", lines=6267,
    description="MARISA: static, space-efficient tries (marisa-trie's bundled C++ library)",
    pypi="marisa-trie", sha256="44ce3bdbeb7c950d463e460184fc3e18702df9ef0edb826bac672fd789fb1d20",
    sources=("marisa-trie/lib/**/*.cc",), include=("marisa-trie/include", "marisa-trie/lib"),
    split="train",
    programs=(Program("libmarisa.so", "shared", exports=("_ZN6marisa*",), libs=("stdc++",)),),
)
