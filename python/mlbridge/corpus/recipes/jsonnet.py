"""A script-backed recipe: jsonnet's build generates core/std.jsonnet.h (the
standard library's source as a byte list) before compiling; ``prepare`` does it."""
import os

from ..programs import Program
from .recipe import Recipe


def _pack_std_jsonnet(top: str) -> None:
    out = os.path.join(top, "core", "std.jsonnet.h")
    with open(os.path.join(top, "stdlib", "std.jsonnet"), "rb") as f:
        data = f.read()
    text = ",".join(str(b) for b in data) + ",0\n"
    if not os.path.isfile(out) or open(out).read() != text:
        with open(out, "w") as f:
            f.write(text)


RECIPE = Recipe(
    name="jsonnet", version="0.22.0", language="c++", domain="interpreter (configuration language)",
    lines=79926, description="the Jsonnet language: lexer, parser, static analysis, formatter, VM "
                         "(with the bundled rapidyaml and md5)",
    pypi="jsonnet", sha256="eae5d9bf23c778baad39390f88c13c03b2090dfb5dfa148d6e217df8c1448258",
    sources=("core/*.cpp", "third_party/md5/*.cpp", "third_party/rapidyaml/*.cpp"),
    exclude=("core/*_test.cpp",),
    include=("include", "core", "third_party/md5", "third_party/json", "third_party/rapidyaml"),
    prepare=_pack_std_jsonnet,
    split="train",
    # libjsonnet: the C API of include/libjsonnet.h
    programs=(Program("libjsonnet.so", "shared", exports=("jsonnet_*",), libs=("stdc++", "m")),),
)
