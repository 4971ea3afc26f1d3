"""The model side of a byte-stream channel: serve compiler sessions one after
another, whatever carries the bytes.

:class:`SessionServer` holds the protocol (format detection, header,
refusals, the decision loop, clean and unclean ends); an adapter names its
channel and the few things only its I/O knows (:class:`PipeServer` in
``pipe_server.py``, :class:`ShmServer` in ``shm.py``). The channel interface
is :class:`SessionChannel`."""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable, List, Optional, Protocol, Sequence, Tuple, Union

from .. import formats as _formats
from .channel import Deadline, InputBuffer, reference_count
from ..core.errors import ChannelTimeout, MLBridgeError, PeerClosed, ProtocolError
from ..core.messages import Context, End, Header, ObservationMessage, Outcome, Preamble, Restart
from ..core.session import ModelLike, Observation, Session, describe_error, direct_call, end_session, start_session
from ..core.spec import TensorSpec, required_features_problem
from ..formats.base import DEFAULT_MAX_MESSAGE
from ..formats.framing import FramedModelDecoder

__all__ = ["SessionServer", "SessionChannel"]


class SessionChannel(Protocol):
    """The model's end of a byte-stream channel, as :class:`SessionServer` uses it.

    ``buf`` holds what was read and not yet consumed (``start``/``end``).
    Every wait is bounded by a :class:`~mlbridge.transport.channel.Deadline`.
    """

    base: str
    buf: InputBuffer

    def wait_start(self, deadline: Deadline, watch: Iterable[int] = ()) -> str:
        """Idle wait for a session's first bytes: "data", "eof", "watch", "timeout" (or "retry")."""

    def fill(self, need: int, deadline: Deadline) -> bool:
        """Buffer until ``need`` bytes are there; False at end of stream."""

    def refiller(self, deadline: Deadline) -> Callable[[], bool]:
        """``deadline.rearm(); fill(1, deadline)`` as one call, for the decision loop."""

    def write(self, data: Any, deadline: Deadline) -> None:
        """Send bytes to the compiler; PeerClosed when it is gone."""

    def reopen_out(self) -> None:
        """After a clean end of stream: ready for the next compiler."""

    def drain_in(self) -> int:
        """Discard replies a compiler left unread."""

    def hang_up(self) -> None:
        """End the session from the model's side."""

    def close(self) -> None:
        """Release the channel and whatever it created."""


class _Eof(Exception):
    """End of stream at a message boundary."""


_monotonic = time.monotonic

#: A bitstream answer that took longer than this is sent only if the compiler
#: has written nothing since its question (see SessionServer._asker_gone).
_SLOW_ANSWER_S = 0.001


def _end_of_stream(sess: Session, framed: bool) -> bool:
    """The compiler closed the stream at a message boundary: a clean end in
    bitstream, a compiler that died in a framed format (no end message)."""
    if framed:
        sess.clean = False
        sess.error = "the compiler closed the stream without an end message (died?)"
    else:
        sess.clean = True
    return True


def _kind(msg: Any) -> str:
    """A message's kind as errors name it ("observation", "header", ...)."""
    return type(msg).__name__.lower().replace("message", "")


class SessionServer:
    """Serve compiler sessions on one channel, one after another.

    ``base``: channel path (None: a fresh private folder). ``format``:
    "auto" (per session: bitstream or the framed preamble), or one of
    "bitstream", "json", "protobuf". ``timeout``: bound in seconds on every
    read and write inside a session. ``required_features``: names or specs
    the model needs; a session without them is refused. ``record_dir``: write
    each session's bytes to ``session-NNNN.out``/``.in``.

    Adapters override :meth:`_open_channel` and, where their I/O allows,
    :meth:`_quick_writer` and :meth:`pending_input`; ``stale_replies`` says
    whether a late bitstream answer could reach the next session.
    """

    #: A bitstream reply carries no id: can a late one reach the next session?
    stale_replies = False

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
        self.channel: SessionChannel = self._open_channel(base)
        self.sessions_started = 0
        self._resume: Optional[Any] = None   # framed format of a header that restarted a session
        self._rec: Optional[Tuple[Any, Any]] = None

    # -- what an adapter provides ------------------------------------------------
    def _open_channel(self, base: Optional[str]) -> SessionChannel:
        """The model's end of the channel."""
        raise NotImplementedError

    def _quick_writer(self) -> Optional[Callable[[Any], int]]:
        """For one session: ``f(data) -> bytes written`` that never waits
        (raising BlockingIOError or BrokenPipeError when nothing went), so a
        reply that fits leaves in one call; None: every reply goes through
        ``channel.write``."""
        return None

    def pending_input(self) -> bool:
        """Whether the compiler has sent bytes not yet handled (buffered or in the channel)."""
        return self.channel.buf.avail > 0

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
        """Channel base path (for pipes the compiler uses ``BASE.in`` and ``BASE.out``)."""
        return self.channel.base

    def __enter__(self) -> "SessionServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel; remove what this server created."""
        self.channel.close()

    def serve(self, policy: ModelLike, sessions: Optional[int] = None,
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

    def serve_forever(self, policy: ModelLike) -> None:
        """Serve sessions until the process is stopped."""
        while True:
            self.serve_session(policy, timeout=None)

    def serve_session(self, policy: ModelLike, timeout: Optional[float] = None, *,
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

    def _run(self, sess: Session, policy: ModelLike, watch: Sequence[int],
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
            # (No drain of the reply direction here: the previous compiler may
            # still be reading its last reply. Stale bytes are drained at end
            # of stream, and clients drain at connect and match reply ids.)
            msg = self._next(dec)
            if isinstance(msg, Preamble):
                msg = self._next(dec)
            if not isinstance(msg, Header):
                raise ProtocolError(f"{sess.format}: expected a header, got a {_kind(msg)}")
            sess.features, sess.advice = msg.features, msg.advice
            refusal = start_session(policy, sess, self._refusal(sess, msg))
            if refusal is not None:
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
            sess.error = describe_error(exc)
            sess.exception = exc
            abort = True
            if not isinstance(exc, (ProtocolError, ChannelTimeout, PeerClosed)):
                raise_exc = exc
            fmt = getattr(exc, "format", None) or fmt
            if fmt is not None and fmt.framed and not isinstance(exc, PeerClosed):
                # Framed formats can still say why before hanging up.
                self._try_send(fmt.error(-1, describe_error(exc)))
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
                    # A hook error is reported unless another error already is.
                    end_session(policy, sess, bool(sess.clean), raise_errors=raise_exc is None)
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
            if isinstance(msg, ObservationMessage):
                self._send(fmt.error(msg.id, f"session refused: {refusal}"))

    def _asker_gone(self, sess: Session, oid: int, t_asked: float) -> bool:
        """Whether the compiler that asked has given up: bytes have come since
        its question. A bitstream compiler writes nothing between a question
        and reading its answer, so those bytes are a new session (its header),
        written after the old one's timeout. Bitstream replies carry no id:
        sent now, the late answer would wait for the new session, which would
        read it as the answer to its own first question, a silent wrong
        answer. Looked for in the channel (a system call) only when the
        answer took a while, since no compiler gives up within a millisecond.
        (An answer of zero bytes is never stale: the compiler reads nothing
        and may go on at once.)"""
        buf = self.channel.buf
        if buf.end == buf.start and (_monotonic() - t_asked <= _SLOW_ANSWER_S or not self.pending_input()):
            return False
        sess.clean = False
        sess.error = (f"the answer to observation {oid} came after the compiler gave up waiting "
                      "(a new session began): not sent")
        return True

    def _loop(self, sess: Session, dec: Any, fmt: Any, policy: ModelLike) -> bool:
        """Serve messages until the session ends. Returns True at end of stream.

        One decision path, fed two ways: the decoder's per-session reader (not
        recording; bitstream, or a framed format with a reader) takes an
        observation whose bytes are all buffered in one call; any other
        message, a short buffer or an error goes through _next()."""
        framed = fmt.framed
        encode = fmt.answer_encoder(sess.advice)   # checks and layout worked out once per session
        ask = direct_call(policy)
        on_context = getattr(policy, "on_context", None)
        send = self._send
        recording = self._rec is not None
        reader = getattr(dec, "observation_reader", None)
        fast = reader() if reader is not None and not recording else None
        ch = self.channel
        buf = ch.buf
        fill, write = ch.fill, ch.write
        deadline = self._msg_deadline
        refill = ch.refiller(deadline)   # deadline.rearm(); fill(1, deadline), in one call
        # A reply that fits leaves in one call here (what write() would do,
        # minus a few); anything else goes through write().
        quick = None if recording else self._quick_writer()
        stale_check = self.stale_replies and not framed
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
            got = None
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
            if got is None:
                try:
                    msg = self._next(dec)
                except _Eof:
                    return _end_of_stream(sess, framed)
                except ProtocolError as exc:
                    if framed and exc.id is not None and isinstance(dec, FramedModelDecoder):
                        # A well-framed but wrong observation: say so and go on.
                        send(fmt.error(exc.id, describe_error(exc)))
                        sess.errors += 1
                        continue
                    raise
                if type(msg) is not ObservationMessage:
                    if isinstance(msg, Context):
                        sess.context = msg.name
                        sess.contexts += 1
                        if on_context is not None:
                            on_context(msg.name)
                        continue
                    if isinstance(msg, End):
                        sess.clean = True
                        return False
                    if isinstance(msg, Restart):
                        # The next session's first bytes: this one is over.
                        if msg.format == "header":
                            self._resume = fmt
                        if framed:
                            sess.clean = False
                            sess.error = "a new session began before this one sent its end message"
                        else:
                            sess.clean = True
                        return False
                    if isinstance(msg, Outcome):
                        continue
                    raise ProtocolError(f"{sess.format}: unexpected {_kind(msg)} message")
                oid, tensors = msg.id, msg.tensors
                del msg
            # -- one decision, however it was read --
            if spare is None:
                obs = Observation(oid, sess.context, sess, tensors)
            else:   # the last decision's Observation, which nobody kept: no new object
                obs, spare = spare, None
                # (Its slots set here, not through a method: a call per decision
                # costs about 700 instructions, measured by advisor_overhead.)
                obs.id, obs.context, obs._tensors = oid, sess.context, tensors
            t_late = _monotonic() + _SLOW_ANSWER_S if stale_check else 0.0
            try:
                data = encode(oid, ask(obs))
            except Exception as exc:
                if not framed:
                    raise   # bitstream cannot say: the session ends, serve()'s caller is told
                del tensors, got, obs
                send(fmt.error(oid, describe_error(exc)))
                sess.errors += 1
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
            if quick is not None:
                try:
                    sent = quick(data)
                except (BlockingIOError, BrokenPipeError):
                    pass   # write() below waits, or raises PeerClosed
            if sent != len(data):
                if recording:
                    send(data)
                else:
                    deadline.rearm()
                    write(data[sent:] if sent else data, deadline)
            sess.observations += 1
