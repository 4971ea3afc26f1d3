"""Size tuning for one program (`mlbridge tune`, docs/tuning.md): per module,
the pass order that clang runs in place of -Oz's, searched on the program's own
corpus and judged by the linked programs' stored bytes; written as a tuning
file that any build applies with the mlbridge LLVM plugin."""
from .run import TuneError, TuneOptions, tune
from .tuning_file import TuningFile, TuningFileError, flags, read

__all__ = ["TuneError", "TuneOptions", "TuningFile", "TuningFileError", "flags", "read", "tune"]
