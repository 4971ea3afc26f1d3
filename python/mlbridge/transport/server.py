"""The model side: serve compiler sessions over a channel (named pipes here;
shared memory in shm.py)."""
from __future__ import annotations

import os
import time
import types
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import formats as _formats
from .channel import Deadline, ServerChannel, pending_bytes, reference_count
from ..core.errors import ChannelTimeout, MLBridgeError, PeerClosed, ProtocolError
from ..formats.base import DEFAULT_MAX_MESSAGE
from ..formats.framing import FramedModelDecoder
from ..core.messages import Context, End, Header, ObservationMessage as _ObsMsg, Outcome, Preamble, Restart
from ..core.spec import TensorSpec, required_features_problem

__all__ = ["Observation", "Session", "SessionStats", "Model", "PipeServer", "Policy"]


class Observation:
    """One decision request handed to a policy.

    ``obs["name"]`` is the feature's array: a read-only view (bitstream views
    point into the channel buffer; copy an array to keep it beyond the call
    cheaply, e.g. ``np.array(obs["x"])``).

    ``tensors`` is a mapping name -> array, or (the bitstream hot path) one
    read-only numpy record whose fields are the features: then a feature is
    one field lookup, with no mapping object per decision.
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


Policy = Union[Model, Callable[[Observation], Any]]


class _Eof(Exception):
    """End of stream at a message boundary."""


_os_write = os.write
_monotonic = time.monotonic

#: A bitstream answer that took longer than this is sent only if the compiler
#: has written nothing since its question (see PipeServer._asker_gone).
_SLOW_ANSWER_S = 0.001


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


def _end_of_stream(sess: Session, framed: bool) -> bool:
    """The compiler closed the stream at a message boundary: a clean end in
    bitstream, a compiler that died in a framed format (no end message)."""
    if framed:
        sess.clean = False
        sess.error = "the compiler closed the stream without an end message (died?)"
    else:
        sess.clean = True
    return True


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class PipeServer:
    """Serve compiler sessions on a named-pipe channel, one after another.

    ``base``: channel path without ``.in``/``.out`` (None: a fresh private
    folder). ``format``: "auto" (per session: bitstream or the framed
    preamble), or one of "bitstream", "json", "protobuf". ``timeout``: bound in
    seconds on every read and write inside a session. ``required_features``:
    names or specs the model needs; a session without them is refused.
    ``record_dir``: write each session's bytes to ``session-NNNN.out``/``.in``.
    """

    def __init__(self, base: Optional[str] = None, *, format: str = "auto", timeout: Optional[float] = 10.0,
                 required_features: Optional[Iterable[Any]] = None, record_dir: Optional[str] = None,
                 max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        if format != "auto":
            _formats.get_format(format)
        self.format = format
        self.timeout = timeout   # also makes the per-message deadline
        self.max_message = max_message
        self.required: List[Union[str, TensorSpec]] = []
        for r in required_features or ():
            self.required.append(r if isinstance(r, str) else TensorSpec.coerce(r))
        self.record_dir = os.fspath(record_dir) if record_dir is not None else None
        if self.record_dir is not None:
            os.makedirs(self.record_dir, exist_ok=True)
        self.channel = self._open_channel(base)
        self.sessions_started = 0
        self._resume: Optional[Any] = None   # framed format of a header that restarted a session
        self._rec: Optional[Tuple[Any, Any]] = None

    def _open_channel(self, base: Optional[str]) -> Any:
        """The model's end of the channel (subclasses serve other transports)."""
        return ServerChannel(base)

    # -- public API ------------------------------------------------------------
    @property
    def timeout(self) -> Optional[float]:
        """Bound in seconds on every read and write inside a session (None: none)."""
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: Optional[float]) -> None:
        self._timeout = seconds
        self._msg_deadline = Deadline(seconds, lazy=True)

    @property
    def base(self) -> str:
        """Channel base path: the compiler uses ``BASE.in`` and ``BASE.out``."""
        return self.channel.base

    def __enter__(self) -> "PipeServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel; remove the FIFOs and folder this server created."""
        self.channel.close()

    def serve(self, policy: Policy, sessions: Optional[int] = None,
              timeout: Optional[float] = None) -> List[Session]:
        """Serve sessions one after another on this channel.

        ``sessions``: how many (None: until idle for ``timeout``, or forever if
        ``timeout`` is None). ``timeout``: how long to wait for each session to
        begin. Returns every session's statistics. Raises ChannelTimeout (with
        ``.sessions``) if fewer than ``sessions`` began in time, and re-raises
        a policy error that bitstream could not report (after closing that
        session; the server stays usable).
        """
        done: List[Session] = []
        while sessions is None or len(done) < sessions:
            s = self.serve_session(policy, timeout=timeout)
            if s is None:
                if sessions is None:
                    return done
                err = ChannelTimeout(f"{len(done)} of {sessions} sessions began within {timeout} s on {self.base}")
                err.sessions = done  # type: ignore[attr-defined]
                raise err
            done.append(s)
        return done

    def serve_forever(self, policy: Policy) -> None:
        """Serve sessions until the process is stopped."""
        while True:
            self.serve_session(policy, timeout=None)

    def serve_session(self, policy: Policy, timeout: Optional[float] = None, *,
                      watch: Sequence[int] = (), on_abort: Optional[Callable[[], None]] = None
                      ) -> Optional[Session]:
        """Wait up to ``timeout`` for one session and serve it to its end.

        ``watch``: file descriptors that end the wait when readable (e.g. a
        pidfd of the compiler). ``on_abort``: called before the model closes a
        session on its side (e.g. to kill a compiler that would spin).
        Returns None if no session began.
        """
        ch = self.channel
        idle = Deadline(timeout)
        while True:
            state = ch.wait_start(idle, watch)
            if state == "data":
                break
            if state == "eof":
                # The previous compiler is gone: fresh descriptor, stale replies out.
                ch.reopen_out()
                ch.drain_in()
                self._resume = None
                continue
            if state in ("timeout", "watch"):
                return None
        sess = Session(self.sessions_started)
        self.sessions_started += 1
        self._run(sess, policy, watch, on_abort)
        return sess

    # -- one session -------------------------------------------------------------
    def _deadline(self) -> Deadline:
        """The per-message deadline: one object, restarted for each message;
        its clock starts only when a read or write has to wait."""
        d = self._msg_deadline
        d.rearm()
        return d

    def _start_record(self, sess: Session) -> None:
        if self.record_dir is None:
            return
        name = os.path.join(self.record_dir, f"session-{sess.index:04d}")
        sess.record = (name + ".out", name + ".in")
        self._rec = (open(name + ".out", "wb"), open(name + ".in", "wb"))

    def _stop_record(self) -> None:
        if self._rec is not None:
            for f in self._rec:
                f.close()
            self._rec = None

    def _next(self, dec: Any) -> Any:
        """Next message of the session; raises _Eof at a clean end of stream."""
        ch = self.channel
        buf = ch.buf
        deadline = None
        while True:
            if buf.end == buf.start:
                # Nothing buffered (the usual case after a reply): read before
                # asking the decoder, which could only say "need a byte".
                deadline = self._deadline()
                if not ch.fill(1, deadline):
                    raise _Eof()
            try:
                got = dec.decode(buf.data, buf.start, buf.end)
            except ProtocolError as exc:
                nxt = getattr(exc, "next_pos", None)
                if nxt is not None:   # a well-framed bad message: consume it
                    if self._rec is not None:
                        self._rec[0].write(buf.data[buf.start:nxt])
                    buf.start = nxt
                raise
            if got is not None:
                msg, nxt = got
                if self._rec is not None and nxt > buf.start:
                    self._rec[0].write(buf.data[buf.start:nxt])
                buf.start = nxt
                return msg
            if deadline is None:
                deadline = self._deadline()
            if not ch.fill(dec.need, deadline):
                trunc = dec.truncated(buf.avail)
                if trunc:
                    raise ProtocolError(f"truncated stream: {trunc}")
                raise _Eof()

    def _send(self, data: bytes) -> None:
        d = self._msg_deadline
        d.rearm()
        self.channel.write(data, d)
        if self._rec is not None:
            self._rec[1].write(data)

    def _refusal(self, sess: Session, hdr: Header) -> Optional[str]:
        if self.format != "auto" and sess.format != self.format:
            return f"ProtocolError: this model serves format {self.format}, the compiler speaks {sess.format}"
        return required_features_problem(hdr.features, self.required)

    def _start(self, sess: Session) -> Tuple[Any, Any]:
        """Pick the session's format and decoder from its first bytes."""
        ch = self.channel
        buf = ch.buf
        if self._resume is not None:
            # A header that arrived without a preamble: same framed format.
            fmt, self._resume = self._resume, None
            dec = FramedModelDecoder(self.max_message)
            dec.format = fmt
            dec.need = 4
            sess.format = fmt.name
            return dec, fmt
        kind = None
        while kind is None:
            kind = _formats.detect(buf.data, buf.start, buf.end)
            if kind is None and not ch.fill(buf.avail + 1, self._deadline()):
                raise ProtocolError(f"truncated stream: {buf.avail} bytes, then end of stream")
        sess.format = kind
        return _formats.model_decoder_for(kind, self.max_message), _formats.get_format(kind)

    def _try_send(self, data: bytes) -> None:
        try:
            self._send(data)
        except (MLBridgeError, OSError):
            pass

    def _run(self, sess: Session, policy: Policy, watch: Sequence[int],
             on_abort: Optional[Callable[[], None]]) -> None:
        ch = self.channel
        started = False             # on_session_start succeeded: on_session_end is owed
        eof = False                 # the compiler closed its end
        abort = False               # end the session from our side (hang up)
        raise_exc: Optional[BaseException] = None
        fmt: Any = None
        self._start_record(sess)
        try:
            dec, fmt = self._start(sess)
            # (No drain of BASE.in here: the previous compiler may still be
            # reading its last reply. Stale bytes are drained at end of stream,
            # and clients drain at connect and match reply ids.)
            msg = self._next(dec)
            if isinstance(msg, Preamble):
                msg = self._next(dec)
            if not isinstance(msg, Header):
                raise ProtocolError(f"{sess.format}: expected a header, got a {type(msg).__name__.lower()}")
            sess.features, sess.advice = msg.features, msg.advice
            refusal = self._refusal(sess, msg)
            if refusal is None:
                hook = getattr(policy, "on_session_start", None)
                if hook is not None:
                    try:
                        hook(sess)
                    except Exception as exc:
                        refusal = _describe(exc)
                        sess.exception = exc
            if refusal is not None:
                sess.refused = refusal
                sess.clean = False
                if not fmt.framed:
                    abort = True          # bitstream can only hang up
                    return
                self._send(fmt.error(-1, refusal))
                eof = self._discard(dec, fmt, refusal)
                return
            started = True
            if fmt.framed:
                self._send(fmt.ack())
            eof = self._loop(sess, dec, fmt, policy)
        except _Eof:
            eof = True
            if sess.clean is None:
                sess.clean = False
                sess.error = "end of stream before the session header"
        except BaseException as exc:
            # ProtocolError, ChannelTimeout, PeerClosed: the compiler's fault,
            # recorded in the stats. Anything else (a policy error bitstream
            # cannot report, a hook error) also goes to serve()'s caller.
            sess.clean = False
            sess.error = _describe(exc)
            sess.exception = exc
            abort = True
            if not isinstance(exc, (ProtocolError, ChannelTimeout, PeerClosed)):
                raise_exc = exc
            fmt = getattr(exc, "format", None) or fmt
            if fmt is not None and fmt.framed and not isinstance(exc, PeerClosed):
                # Framed formats can still say why before hanging up.
                self._try_send(fmt.error(-1, _describe(exc)))
        finally:
            sess.duration = time.monotonic() - sess.started
            try:
                if abort:
                    if on_abort is not None:
                        on_abort()
                    ch.hang_up()
                elif eof:
                    ch.reopen_out()
                    ch.drain_in()
            finally:
                self._stop_record()
                if started:
                    end_hook = getattr(policy, "on_session_end", None)
                    if end_hook is not None:
                        if raise_exc is None:
                            end_hook(sess, bool(sess.clean))
                        else:
                            try:
                                end_hook(sess, False)
                            except Exception:
                                pass   # the original error is the one to report
        if raise_exc is not None:
            raise raise_exc

    def _discard(self, dec: Any, fmt: Any, refusal: str) -> bool:
        """After a refused framed header: answer observations with the refusal
        until the compiler ends. Returns True at end of stream."""
        while True:
            try:
                msg = self._next(dec)
            except _Eof:
                return True
            if isinstance(msg, End):
                return False
            if isinstance(msg, Restart):
                if msg.format == "header":
                    self._resume = fmt
                return False
            if isinstance(msg, _ObsMsg):
                self._send(fmt.error(msg.id, f"session refused: {refusal}"))

    def _asker_gone(self, sess: Session, oid: int, t_asked: float) -> bool:
        """Whether the compiler that asked has given up: bytes have come since
        its question. A bitstream compiler writes nothing between a question
        and reading its answer, so those bytes are a new session (its header),
        written after the old one's timeout. Bitstream replies carry no id:
        sent now, the late answer would wait in BASE.in and the new session
        would read it as the answer to its own first question, a silent wrong
        answer. Checked (one ioctl) only when the answer took a while, since
        no compiler gives up within a millisecond. (An answer of zero bytes
        is never stale: the compiler reads nothing and may go on at once.)"""
        buf = self.channel.buf
        if buf.end == buf.start and (_monotonic() - t_asked <= _SLOW_ANSWER_S
                                     or pending_bytes(self.channel.out_fd) == 0):
            return False
        sess.clean = False
        sess.error = (f"the answer to observation {oid} came after the compiler gave up waiting "
                      "(a new session began): not sent")
        return True

    def _loop(self, sess: Session, dec: Any, fmt: Any, policy: Policy) -> bool:
        """Serve messages until the session ends. Returns True at end of stream."""
        framed = fmt.framed
        encode = fmt.answer_encoder(sess.advice)   # checks and layout worked out once per session
        ask = direct_call(policy)
        on_context = getattr(policy, "on_context", None)
        send = self._send

        def answer_error(oid: int, exc: BaseException) -> None:   # framed formats say what went wrong
            send(fmt.error(oid, _describe(exc)))
            sess.errors += 1
        # The hot path (not recording; bitstream, or a framed format with a
        # per-session reader): an observation whose bytes are all buffered is
        # decoded, answered and sent in a few calls; any other message, a short
        # buffer or an error goes through _next().
        reader = getattr(dec, "observation_reader", None)
        fast = reader() if reader is not None and self._rec is None else None
        ch = self.channel
        buf = ch.buf
        fill, write = ch.fill, ch.write
        deadline = self._msg_deadline
        refill = ch.refiller(deadline)   # deadline.rearm(); fill(1, deadline), in one call
        # Named pipes: a reply that fits the pipe leaves in one os.write here
        # (what write() would do, minus two calls); anything else goes through write().
        pipe_fd = type(ch) is ServerChannel
        in_fd = ch.in_fd if pipe_fd else -1   # the session's BASE.in (replaced only between sessions)
        # Bitstream replies carry no id: a late answer must not reach the next session.
        stale_check = pipe_fd and not framed
        # The next observation's tensor bytes should land 64-byte aligned
        # (InputBuffer.home; the decoder knows its prefix). LLVM counts ids up
        # from 0: the home moves when the next id's prefix grows, i.e. when
        # the id reaches id_top (the alignment is only for speed: ids going
        # down would cost nothing else).
        home_for = dec.aligned_home
        id_top: float = -1
        # Building an Observation costs more than the rest of a decision's
        # bookkeeping; one that the policy did not keep is used again.
        spare: Optional[Observation] = None
        while True:
            if fast is not None:
                if buf.end == buf.start and not refill():
                    return _end_of_stream(sess, framed)
                got = fast(buf.data, buf.start, buf.end)
                if got is None and dec.need:
                    # An observation still arriving (a big record comes in pieces): read the rest.
                    deadline.rearm()
                    if fill(dec.need, deadline):
                        got = fast(buf.data, buf.start, buf.end)
                if got is not None:
                    oid, tensors, buf.start = got
                    if oid >= id_top:
                        buf.home, id_top = home_for(oid + 1)
                    if spare is None:
                        obs = Observation(oid, sess.context, sess, tensors)
                    else:   # the last decision's Observation, which nobody kept: no new object
                        obs, spare = spare, None
                        obs.id, obs.context, obs._tensors = oid, sess.context, tensors
                    t_late = _monotonic() + _SLOW_ANSWER_S if stale_check else 0.0
                    try:
                        data = encode(oid, ask(obs))
                    except Exception as exc:
                        if not framed:
                            raise   # bitstream cannot say: the session ends, serve()'s caller is told
                        del tensors, got, obs
                        answer_error(oid, exc)
                        continue
                    del tensors, got   # drop views into the buffer before reading again
                    if reference_count(obs) == 2:   # only `obs` (and the call's argument) hold it
                        obs._tensors = obs._features = None
                        spare = obs
                    else:
                        spare = None   # the policy kept it: it stays as it is
                    del obs
                    # _asker_gone's cheap half inline (this runs once per decision):
                    # a quick answer and nothing buffered since the question.
                    if (stale_check and (_monotonic() > t_late or buf.end != buf.start) and data
                            and self._asker_gone(sess, oid, t_late - _SLOW_ANSWER_S)):
                        return False
                    sent = 0
                    if pipe_fd:
                        try:
                            sent = _os_write(in_fd, data)
                        except (BlockingIOError, BrokenPipeError):
                            pass   # write() below waits, or raises PeerClosed
                    if sent != len(data):
                        deadline.rearm()
                        write(data[sent:] if sent else data, deadline)
                    sess.observations += 1
                    continue
            try:
                msg = self._next(dec)
            except _Eof:
                return _end_of_stream(sess, framed)
            except ProtocolError as exc:
                if framed and exc.id is not None and isinstance(dec, FramedModelDecoder):
                    # A well-framed but wrong observation: say so and go on.
                    answer_error(exc.id, exc)
                    continue
                raise
            if type(msg) is _ObsMsg:
                obs = Observation(msg.id, sess.context, sess, msg.tensors)
                t_asked = _monotonic() if stale_check else 0.0
                try:
                    data = encode(msg.id, ask(obs))
                except Exception as exc:
                    if not framed:
                        raise   # bitstream cannot carry it: close and tell serve()'s caller
                    answer_error(msg.id, exc)
                    continue
                del obs, msg   # drop views into the buffer before reading again
                if stale_check and data and self._asker_gone(sess, sess.observations, t_asked):
                    return False
                send(data)
                sess.observations += 1
            elif isinstance(msg, Context):
                sess.context = msg.name
                sess.contexts += 1
                if on_context is not None:
                    on_context(msg.name)
            elif isinstance(msg, End):
                sess.clean = True
                return False
            elif isinstance(msg, Restart):
                # The next session's first bytes: this one is over.
                if msg.format == "header":
                    self._resume = fmt
                if framed:
                    sess.clean = False
                    sess.error = "a new session began before this one sent its end message"
                else:
                    sess.clean = True
                return False
            elif isinstance(msg, Outcome):
                continue
            else:
                raise ProtocolError(f"{sess.format}: unexpected {type(msg).__name__.lower()} message")
