from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="fasttext", version="0.9.3", language="c++", domain="machine learning (text classification)",
    lines=5617, description="fastText: word embeddings and text classification, its library and "
                         "command-line tool (src/ of the sdist)",
    pypi="fasttext", sha256="eb03f2ef6340c6ac9e4398a30026f05471da99381b307aafe2f56e4cd26baaef",
    sources=("src/*.cc",), include=("src",),
    split="train",
    programs=(Program("fasttext", "executable", libs=("stdc++", "m", "pthread")),),
)
