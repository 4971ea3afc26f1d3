"""Stock LLVM: its interactive-mode advisors driven by a Python policy
(``interactive``) and its training logs (``logs``)."""
from .interactive import *  # noqa: F401,F403
from .interactive import __all__  # noqa: F401
