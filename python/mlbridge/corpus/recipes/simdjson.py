from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="simdjson", version="7.0.2", language="c++", domain="parser (JSON)", lines=179687,
    description="simdjson's single-file amalgamation (as pysimdjson bundles it)",
    pypi="pysimdjson", sha256="44cf276e48912a3b9c7ca362c14da8420a7ac15a9f1a16ec95becff86db3904a",
    sources=("simdjson/simdjson.cpp",), include=("simdjson",),
    split="eval",
    programs=(Program("libsimdjson.so", "shared", exports=("_ZN8simdjson*",), libs=("stdc++",)),),
)
