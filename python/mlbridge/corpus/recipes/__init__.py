"""Recipes: real projects to build into corpora (`mlbridge corpus build NAME`).
One small declarative module per project (``RECIPE = Recipe(...)``); ``build.py``
holds the logic they share. ``tests`` builds the files of tests/corpus (CI)."""
from __future__ import annotations

import importlib
from typing import Dict

from .recipe import Recipe

#: recipe modules, in `corpus list` order
MODULES = ("brotli", "lz4", "zstandard", "pycryptodome", "pyerfa", "simdjson", "jsonnet",
           "marisa", "box2d", "pymunk", "patchelf", "fasttext", "sentencepiece", "ninja", "pyclipper",
           "deflate", "pyroaring", "tests")


def recipes() -> Dict[str, Recipe]:
    out: Dict[str, Recipe] = {}
    for m in MODULES:
        r: Recipe = importlib.import_module(f".{m}", __name__).RECIPE
        out[r.name] = r
    return out
