"""Inlining for size (ml-compiler-opt's rl/inlining): the problem (``problem.py``)
and how its policies are trained: the size trainer (ES or PPO,
``size_trainer.py``) and its recipe (``recipe.py``), -Oz's decisions to imitate
(``oz_teacher.py``), compiles that log or flip decisions (``logged_compile.py``),
the greedy search and learning from it (``search.py``, ``learn_from_search.py``),
and the room a per-callee search finds (``room.py``, ``room_recipe.py``).

Importing this package imports nothing: the registry (``mlbridge.problems``)
needs the definition only, and the trainers sit above ``corpus/`` and ``train/``
(docs/python.md, "Which stage may import which")."""
