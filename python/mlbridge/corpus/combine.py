"""Combines corpora into one, as LLVM's ``combine_training_corpus`` does: ROOT holds
one corpus per sub-folder; ROOT/corpus_description.json then lists every module as
SUBFOLDER/NAME, with the keys the corpora share (which must be equal: the same
ThinLTO mode and command override)."""
from __future__ import annotations

import os
from typing import Any, Dict, List

from .layout import DESCRIPTION, CorpusError, load, write_description_dict


def combine(root: str) -> Dict[str, Any]:
    """Writes ROOT/corpus_description.json; returns what it wrote."""
    if not os.path.isdir(root):
        raise CorpusError(f"{root}: not a folder")
    subs = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, DESCRIPTION)))
    if not subs:
        raise CorpusError(f"{root}: no sub-folder holds a corpus ({DESCRIPTION})")
    names: List[str] = []
    shared: Dict[str, Any] = {}
    first = ""
    for d in subs:
        sub = os.path.join(root, d)
        corpus = load(sub, check_files=False)   # its errors name the sub-corpus's files with their paths
        desc: Dict[str, Any] = {}
        if corpus.global_command_override is not None:
            desc["global_command_override"] = corpus.global_command_override
        desc["has_thinlto"] = corpus.has_thinlto
        desc.update(corpus.extra)
        if not first:
            shared, first = desc, d
        elif desc != shared:
            diff = sorted(k for k in set(desc) | set(shared) if desc.get(k) != shared.get(k))
            raise CorpusError(f"{root}: corpora {first} and {d} differ in more than their "
                              f"modules ({', '.join(diff)})")
        names.extend(f"{d}/{m.name}" for m in corpus.modules)
    out = dict(shared)
    out["modules"] = names
    target = os.path.join(root, DESCRIPTION)
    if os.path.isdir(target):   # checked before writing: the rename would fail and leave the temporary file
        raise CorpusError(f"{target}: a folder is in the way of the description to write; nothing written")
    write_description_dict(root, out)
    return out
