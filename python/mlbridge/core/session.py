"""What a model author writes against, whatever carries the session: the
:class:`Observation` a policy is handed, the :class:`Session` it belongs to,
the :class:`Model` base class, and the session's life (start, end) as every
server runs it (pipes and shared memory in ``transport/``, gRPC in ``rpc/``)."""
from __future__ import annotations

import contextlib
import time
import types
from typing import Any, Callable, ContextManager, Dict, Iterable, Iterator, Optional, Tuple, Union

import numpy as np

from .spec import TensorSpec

__all__ = ["Observation", "Session", "SessionStats", "Model", "ModelLike", "direct_call", "describe_error",
           "start_session", "end_session"]


class Observation:
    """One decision request handed to a policy.

    ``obs["name"]`` is the feature's array: a read-only view (bitstream views
    point into the channel buffer; copy an array to keep it beyond the call
    cheaply, e.g. ``np.array(obs["x"])``).

    ``tensors`` is a mapping name -> array, or (the bitstream hot path) one
    read-only numpy record whose fields are the features: then a feature is
    one field lookup, with no mapping object per decision.

    A server may point an Observation that nobody kept at the next decision
    (setting ``id``, ``context`` and ``_tensors``): see SessionServer._loop.
    """

    __slots__ = ("id", "context", "session", "_tensors", "_features")

    def __init__(self, id: int, context: str, session: "Session", tensors: Any) -> None:
        self.id = id
        self.context = context
        self.session = session
        self._tensors = tensors
        self._features: Optional[Dict[str, np.ndarray]] = None

    def _names(self) -> Iterable[str]:
        t = self._tensors
        return t.dtype.names if type(t) is np.ndarray else t

    @property
    def features(self) -> Dict[str, np.ndarray]:
        """All features: name -> read-only array, in header order."""
        f = self._features
        if f is None:
            t = self._tensors
            f = self._features = t if type(t) is dict else {k: t[k] for k in self._names()}
        return f

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._tensors[name]
        except (ValueError, IndexError):   # how a numpy record refuses an unknown field
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def keys(self) -> Iterable[str]:
        return self.features.keys()

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._names() else default

    def __repr__(self) -> str:
        return f"Observation(id={self.id}, context={self.context!r}, features={list(self._names())})"


class Session:
    """One compiler session, live while it is served and then its statistics.

    ``clean`` is None while the session runs, then True for a clean end
    (framed ``end``; bitstream end of stream at a message boundary).
    """

    def __init__(self, index: int) -> None:
        self.index = index
        self.format: str = "unknown"
        self.features: Tuple[TensorSpec, ...] = ()
        self.advice: Tuple[TensorSpec, ...] = ()
        self.context: str = ""
        self.observations = 0          # decisions answered with advice
        self.contexts = 0
        self.errors = 0                # error replies sent (framed formats)
        self.clean: Optional[bool] = None
        self.refused: Optional[str] = None    # why the session was refused
        self.error: Optional[str] = None      # what ended it abnormally
        self.exception: Optional[BaseException] = None
        self.started = time.monotonic()
        self.duration = 0.0
        self.record: Optional[Tuple[str, str]] = None   # (NAME.out, NAME.in) paths

    def __repr__(self) -> str:
        state = "live" if self.clean is None else ("clean" if self.clean else "unclean")
        extra = f", refused={self.refused!r}" if self.refused else (f", error={self.error!r}" if self.error else "")
        return (f"Session(index={self.index}, format={self.format!r}, {state}, "
                f"observations={self.observations}, errors={self.errors}{extra})")


#: What serve() returns for each session.
SessionStats = Session


class Model:
    """Base class for policies. Override ``__call__``; the hooks are optional.

    A plain callable ``f(obs) -> advice`` works as a policy too.
    """

    def on_session_start(self, session: Session) -> None:
        """A compiler connected; raise to refuse the session (the message is sent back)."""

    def on_context(self, name: str) -> None:
        """The compiler named what follows (e.g. the function being compiled)."""

    def on_session_end(self, session: Session, clean: bool) -> None:
        """The session is over (``clean`` False: the compiler died or an error ended it)."""

    def __call__(self, obs: Observation) -> Any:
        raise NotImplementedError


#: What every server accepts as the policy: a Model, or any ``f(obs) -> advice``.
ModelLike = Union[Model, Callable[[Observation], Any]]


def direct_call(policy: Any) -> Callable[[Any], Any]:
    """``policy`` in the form that is cheapest to call once per decision: an
    object whose ``__call__`` is a Python function is called through the type
    slot (a C detour that builds an argument tuple and a new interpreter
    frame); its bound ``__call__`` takes the interpreter's fast path instead.
    Plain functions and anything else are returned as they are."""
    f = getattr(type(policy), "__call__", None)
    if isinstance(f, types.FunctionType):
        return f.__get__(policy)   # type: ignore[no-any-return]
    return policy


def describe_error(exc: BaseException) -> str:
    """An exception as the one line sent to the compiler and kept in the stats."""
    return f"{type(exc).__name__}: {exc}"


_NO_LOCK: ContextManager[Any] = contextlib.nullcontext()


def start_session(policy: Any, sess: Session, refusal: Optional[str],
                  lock: ContextManager[Any] = _NO_LOCK) -> Optional[str]:
    """Begin ``sess`` for ``policy`` unless the server already refuses it
    (``refusal``): the policy's ``on_session_start`` may refuse it too, by
    raising. Returns why the session is refused (recorded in ``sess``), or
    None when it runs and ``on_session_start`` is owed its ``on_session_end``."""
    if refusal is None:
        hook = getattr(policy, "on_session_start", None)
        if hook is not None:
            try:
                with lock:
                    hook(sess)
            except Exception as exc:
                refusal = describe_error(exc)
                sess.exception = exc
    if refusal is not None:
        sess.refused = refusal
        sess.clean = False
    return refusal


def end_session(policy: Any, sess: Session, clean: bool, *, raise_errors: bool = True,
                lock: ContextManager[Any] = _NO_LOCK) -> None:
    """The policy's ``on_session_end``. ``raise_errors`` False: an exception
    from the hook is kept in ``sess.exception`` only (another error is the one
    to report, or nobody could catch it)."""
    hook = getattr(policy, "on_session_end", None)
    if hook is None:
        return
    if raise_errors:
        with lock:
            hook(sess, clean)
        return
    try:
        with lock:
            hook(sess, clean)
    except Exception as exc:
        if sess.exception is None:
            sess.exception = exc
