"""Labels: every training module compiled once with the plugin in measure mode
(``-mlbridge-po-measure``), which builds -Oz and each candidate order on a copy
of the module in-process and prints the stored bytes and ``.text`` of each
object, plus the module's 32 features as the deployed policy sees them. One
compile per module instead of one per order; the numbers are the ones the
deployed policy compares.

Rows go to OUT/labels.jsonl as they come (a stopped run resumes where it was)."""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from ....corpus.compile import CompileOptions, Policy, Toolchain, compile_module
from ....corpus.layout import Corpus, Module
from ..problem import MODULE_FEATURES

_FEATURES = re.compile(r"^mlbridge-po-policy: features (.*): ((?:-?\d+ ?)+)$")
_MEASURE = re.compile(r"^mlbridge-po-policy: measure (.*): (oz|order (\d+)) (?:(\d+) (\d+)(?: (\d+))?|failed)$")


@dataclass
class ModuleLabels:
    corpus: str
    module: str
    features: List[int]
    #: -Oz's object: [stored bytes, .text bytes, dynamic relocation bytes]
    oz: List[int]
    #: per candidate order: [stored, .text, dynamic relocations], or None when it failed on this module
    orders: List[Optional[List[int]]]
    seconds: float = 0.0
    error: Optional[str] = None

    @property
    def key(self) -> str:
        return f"{self.corpus}:{self.module}"


def parse_measure(stderr: str, n_orders: int) -> Tuple[List[int], List[int], List[Optional[List[int]]]]:
    """(features, oz, orders) from the plugin's measure lines; ValueError if incomplete."""
    features: Optional[List[int]] = None
    oz: Optional[List[int]] = None
    orders: List[Optional[List[int]]] = [None] * n_orders
    seen = set()
    for ln in stderr.splitlines():
        m = _FEATURES.match(ln)
        if m:
            features = [int(v) for v in m.group(2).split()]
            continue
        m = _MEASURE.match(ln)
        if not m:
            continue
        # stored bytes, .text, and the dynamic relocations PIC code will cost in the program
        size = ([int(m.group(4)), int(m.group(5)), int(m.group(6) or 0)] if m.group(4) is not None else None)
        if m.group(2) == "oz":
            oz = size
        else:
            i = int(m.group(3))
            if not 0 <= i < n_orders:
                raise ValueError(f"order {i} out of range")
            orders[i] = size
            seen.add(i)
    if features is None or len(features) != MODULE_FEATURES:
        raise ValueError("no features line")
    if oz is None:
        raise ValueError("no -Oz measure line")
    if len(seen) != n_orders:
        raise ValueError(f"{n_orders - len(seen)} orders not measured")
    return features, oz, orders


def measure_module(corpus: str, module: Module, candidates: str, n_orders: int, toolchain: Toolchain,
                   timeout: float) -> ModuleLabels:
    """One compile of MODULE that measures -Oz and every order of CANDIDATES."""
    opts = CompileOptions(timeout=timeout, extra_env=lambda _m: {"MLBRIDGE_PO_MEASURE": "1"})
    with tempfile.TemporaryDirectory(prefix="mlbridge-labels-") as tmp:
        res = compile_module(module, Policy("orders", f"orders:{candidates}", model=candidates), tmp, toolchain,
                             opts, tag="labels", problem="phase-ordering")
    row = ModuleLabels(corpus, module.name, [], [], [], seconds=round(res.seconds, 3))
    if res.timed_out or (res.error and res.error.startswith("clang ")):
        row.error = res.error
        return row
    try:
        row.features, row.oz, row.orders = parse_measure(res.stderr, n_orders)
    except ValueError as exc:
        row.error = res.error or f"the plugin's measure lines: {exc}"
    return row


def read_rows(path: str) -> List[ModuleLabels]:
    """The rows of a labels file; a torn last line (a run stopped mid-write) is dropped."""
    rows: List[ModuleLabels] = []
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for ln in f:
            try:
                rows.append(ModuleLabels(**json.loads(ln)))
            except (ValueError, TypeError):
                continue
    return rows


def measure_corpora(path: str, corpora: Sequence[Tuple[str, Corpus]], candidates: str, n_orders: int,
                    toolchain: Toolchain, *, jobs: int, timeout: float,
                    progress: Optional[Callable[[int, str], None]] = None) -> List[ModuleLabels]:
    """Measures every module not yet in PATH (appending rows), returns all rows.
    PROGRESS counts the modules of CORPORA measured before, then each one measured now."""
    rows = read_rows(path)
    done = {r.key for r in rows}
    wanted = {f"{name}:{m.name}" for name, c in corpora for m in c.modules}
    if progress is not None and done & wanted:
        progress(len(done & wanted), "measured before")
    todo = [(name, m) for name, c in corpora for m in c.modules if f"{name}:{m.name}" not in done]
    # large modules first: the pool stays busy to the end
    todo.sort(key=lambda t: -_size(t[1].bc))
    lock = threading.Lock()
    with open(path, "a", encoding="utf-8") as out:
        def one(item: Tuple[str, Module]) -> None:
            row = measure_module(item[0], item[1], candidates, n_orders, toolchain, timeout)
            with lock:
                out.write(json.dumps(asdict(row)) + "\n")
                out.flush()
                rows.append(row)
                if progress is not None:
                    progress(1, row.module)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for f in [pool.submit(one, t) for t in todo]:
                f.result()
    return rows


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
