"""The order policy file: a few whole pass orders that the mlbridge LLVM plugin
tries on any module inside the normal compile, keeping the smallest object
(-Oz is always a candidate, so no module grows). Written by ``mlbridge train
orders`` (problems/phase_ordering/orders/), read by the plugin (integrations/llvm/order_policy.cc)::

    {"format": "mlbridge-order-policy", "version": 1, "llvm_major": 19,
     "tries": 3, "orders": ["function(sroa<modify-cfg>,...),...", ...],
     "model": "ranker.onnx"}

``tries``: orders compiled per module besides -Oz. Without ``model`` they are the
file's first ``tries`` orders; with it, the ``tries`` the model scores highest
from the module's 32 features (input ``module_features`` int64 [32], output
``order_scores`` float [len(orders)]). Extra keys (``names``, ``about``) are for
people; the plugin ignores them. docs/phase-ordering-policy.md.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...core.errors import MLBridgeError
from ...core.files import write_json_atomic

FORMAT = "mlbridge-order-policy"
VERSION = 1
#: the plugin's limits (order_policy.cc)
MAX_ORDERS = 4096
MAX_FILE_BYTES = 64 << 20
#: the ranker's tensors (the plugin's contract)
FEATURES = "module_features"
SCORES = "order_scores"


class OrderPolicyError(MLBridgeError):
    """An order policy file that cannot be read or is damaged (the message names it)."""


@dataclass
class OrderPolicyFile:
    llvm_major: int
    orders: List[str]
    tries: int
    #: a ranker .onnx beside the file (its base name), or None: the first `tries` orders
    model: Optional[str] = None
    #: per order, the tuner's step names (for people)
    names: List[str] = field(default_factory=list)
    about: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"format": FORMAT, "version": VERSION, "llvm_major": self.llvm_major,
                             "tries": self.tries, "orders": list(self.orders)}
        if self.model:
            d["model"] = self.model
        if self.names:
            d["names"] = list(self.names)
        if self.about:
            d["about"] = self.about
        return d

    def check(self) -> None:
        if not self.orders or len(self.orders) > MAX_ORDERS:
            raise OrderPolicyError(f"an order policy needs 1..{MAX_ORDERS} orders, not {len(self.orders)}")
        if not 0 <= self.tries <= len(self.orders):
            raise OrderPolicyError(f"tries must be 0..{len(self.orders)}, not {self.tries}")
        if any(not isinstance(o, str) or not o for o in self.orders):
            raise OrderPolicyError("every order is a non-empty pipeline string")

    def write(self, path: str) -> str:
        """Written whole or not at all (a temporary name, renamed when complete)."""
        self.check()
        return write_json_atomic(path, self.as_dict(), indent=1, newline=True)

    @staticmethod
    def load(path: str) -> "OrderPolicyFile":
        """The file at PATH, checked as the plugin checks it (but for the pipelines'
        parsing, which only the plugin's LLVM can judge): OrderPolicyError naming it."""
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                raise OrderPolicyError(f"{path}: larger than {MAX_FILE_BYTES} bytes, not an order policy")
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except OSError as exc:
            raise OrderPolicyError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise OrderPolicyError(f"{path}: damaged (not JSON: {exc})") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise OrderPolicyError(f"{path}: not an order policy (no \"format\": \"{FORMAT}\")")
        if d.get("version") != VERSION:
            raise OrderPolicyError(f"{path}: version {d.get('version')}, this mlbridge reads {VERSION}")
        try:
            pol = OrderPolicyFile(int(d["llvm_major"]), list(d["orders"]), int(d["tries"]), d.get("model"),
                                  list(d.get("names", [])), dict(d.get("about", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise OrderPolicyError(f"{path}: damaged ({type(exc).__name__}: {exc})") from None
        try:
            pol.check()
        except OrderPolicyError as exc:
            raise OrderPolicyError(f"{path}: {exc}") from None
        return pol
