from ..programs import Program
from .recipe import Recipe

RECIPE = Recipe(
    name="pyerfa", version="2.0.1.5", language="c", domain="math (astronomy)", lines=48151,
    description="ERFA: the IAU SOFA astrometry and time-scale routines (liberfa/ of the sdist)",
    pypi="pyerfa", sha256="17d6b24fe4846c65d5e7d8c362dcb08199dc63b30a236aedd73875cc83e1f6c0",
    sources=("liberfa/erfa/src/*.c",), exclude=("liberfa/erfa/src/t_*.c",),
    include=("liberfa/erfa/src",),
    # what liberfa's configure writes into config.h
    defines=('PACKAGE_VERSION="2.0.1"', "PACKAGE_VERSION_MAJOR=2", "PACKAGE_VERSION_MINOR=0",
             "PACKAGE_VERSION_MICRO=1", 'SOFA_VERSION="20231011"'),
    split="train",
    programs=(Program("liberfa.so", "shared", exports=("era*",), libs=("m",)),),
)
