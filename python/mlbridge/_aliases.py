"""The module paths of the flat layout (mlbridge.server, mlbridge.training, ...)
keep working: each old name is the new module itself (same object, so
monkeypatching and isinstance agree), imported on first use, and
``python -m OLD`` runs the new module's ``__main__`` block."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import Any, Optional

#: old module -> new module (both under ``mlbridge.``)
OLD_PATHS = {
    "spec": "core.spec", "dtypes": "core.dtypes", "values": "core.values", "messages": "core.messages",
    "errors": "core.errors",
    "channel": "transport.channel", "shm": "transport.shm", "server": "transport.server",
    "client": "transport.client", "supervise": "transport.supervise",
    "grpc_server": "rpc.model_server", "grpc_client": "rpc.clients", "_grpc_common": "rpc.common",
    "_lifecycle": "rpc.lifecycle", "workers": "rpc.workers",
    "logs": "llvm.logs", "gym": "train.gym", "training": "train", "bench_model": "testing.bench_model",
}


class _AliasSpec(importlib.machinery.ModuleSpec):
    # runpy gives ``python -m OLD`` the spec's parent as __package__: it must be the
    # new module's package, or the new module's relative imports would break.
    def __init__(self, name: str, loader: Any, target: str) -> None:
        super().__init__(name, loader)
        self._target = target

    @property
    def parent(self) -> str:  # type: ignore[override]
        spec = importlib.util.find_spec(self._target)
        is_pkg = spec is not None and spec.submodule_search_locations is not None
        return self._target if is_pkg else self._target.rpartition(".")[0]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module(self.target)

    def exec_module(self, module: Any) -> None:
        pass  # already executed under its new name

    def get_code(self, fullname: str) -> Any:   # for runpy (python -m OLD)
        spec = importlib.util.find_spec(self.target)
        return spec.loader.get_code(self.target) if spec and spec.loader else None


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Optional[Any]:
        pkg, _, leaf = fullname.rpartition(".")
        new = OLD_PATHS.get(leaf) if pkg == __package__ else None
        if new is None:
            return None
        full = f"{__package__}.{new}"
        return _AliasSpec(fullname, _AliasLoader(full), full)


def install() -> None:
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
