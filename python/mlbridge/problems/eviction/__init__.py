"""Register-allocation eviction (ml-compiler-opt's rl/regalloc): the problem
(``problem.py``), its policy (``policy.py``: the linear scorer, its ONNX export
and warm start), its trainer (``trainer.py``: ES over corpus modules),
LLVM's default rule answering the channel (``default_advisor.py``) and labels from
search around it (``search.py``).

Importing this package imports nothing: the registry (``mlbridge.problems``)
needs the definition only, and the trainer sits above ``corpus/`` and ``train/``
(docs/python.md, "Which stage may import which")."""
