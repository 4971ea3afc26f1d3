"""Corpora of IR modules from real builds, in LLVM's MLGO layout (``extract_ir``'s):
one ``.bc`` and one ``.cmd`` per module plus ``corpus_description.json``.
``layout`` reads and writes that layout; ``extract`` builds a corpus from objects,
``compile_commands.json``, ThinLTO outputs or bitcode; ``recipes`` build real
projects; ``evaluate`` scores a policy against -Oz (``compile``: one module under
one policy; ``where``: where the bytes went; ``training_logs``: the logs a
scoring writes). ``python_callable`` loads a policy named ``module:function``."""
