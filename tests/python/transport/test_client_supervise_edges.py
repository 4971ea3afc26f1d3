"""Issue 26, mutation testing of transport/client.py and transport/supervise.py
(docs/testing.md, "Mutation testing"): what the first mutmut run showed no
test held. set_context bounded by the client's timeout; run_compiler where
the kernel gives no pidfd (the waitid path), and with stdout a pipe."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.core.errors import ChannelTimeout, MLBridgeError, ProtocolError, RemoteError, SpecMismatch
from mlbridge.transport import supervise
from mlbridge.transport.channel import ServerChannel

from conftest import HELPERS, PYDIR, child_env
from test_faults import RawModel, ack_then

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

FAKE = os.path.join(HELPERS, "fake_compiler.py")
FEATS = [T("x", "int64_t", [1])]
ADV = [T("d", "int64_t", [1])]


def cmd(fmt, mode, n=3):
    return [sys.executable, FAKE, "{base}", fmt, mode, str(n)]


def policy(obs):
    return obs["x"] * 10


# ---- client -----------------------------------------------------------------

def test_set_context_to_a_model_that_stops_reading_times_out():
    """The context message is bounded by the client's timeout like every
    other call (not a write that waits forever), and the client is then unusable."""
    ch = ServerChannel()   # holds the FIFOs; nobody reads after the header
    try:
        c = mlbridge.PipeClient(ch.base, FEATS, ADV, format="bitstream", timeout=0.3)
        try:
            with pytest.raises(ChannelTimeout):
                c.set_context("f" * (4 << 20))   # far more than a pipe holds
            with pytest.raises(MLBridgeError, match="unusable"):
                c.evaluate({"x": np.array([1])})
        finally:
            c.close()
    finally:
        ch.close()


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_a_model_that_ends_the_session_with_an_error(fmt):
    """An error reply with id -1 to an observation: the model gave up on the
    session. RemoteError for the session (id -1, the model's own words), and
    the client refuses further use."""
    got = []
    session_error = ack_then(lambda f, msg: f.error(-1, "ResourceExhausted: out of memory"))
    m = RawModel(lambda f, msg: got.append(type(msg).__name__) or session_error(f, msg))
    try:
        with mlbridge.PipeClient(m.base, FEATS, ADV, format=fmt, timeout=5) as c:
            with pytest.raises(RemoteError) as e:
                c.evaluate({"x": 1})
            assert str(e.value) == "model ended the session: ResourceExhausted: out of memory"
            assert e.value.id == -1 and e.value.remote == "ResourceExhausted: out of memory"
            assert e.value.remote_type == "ResourceExhausted"
            with pytest.raises(MLBridgeError, match="^the channel is unusable after an earlier error: "
                                                   "ResourceExhausted: out of memory$"):
                c.evaluate({"x": 2})
    finally:
        m.close()
    assert got == ["Header", "ObservationMessage"]   # no "end" to a model that ended the session


def test_a_header_the_model_never_reads_times_out():
    """The header is bounded by the timeout too: one bigger than a pipe holds,
    to a model that never reads, is ChannelTimeout (not a write that waits forever)."""
    feats = [T(f"feature_with_a_long_name_{i:05d}", "int64_t", [1]) for i in range(16000)]   # 1.3 MB > 1 MiB
    ch = ServerChannel()
    try:
        with pytest.raises(ChannelTimeout):
            mlbridge.PipeClient(ch.base, feats, ADV, format="bitstream", timeout=0.3)
    finally:
        ch.close()


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_a_refused_session_is_a_remote_error_for_the_session(fmt):
    m = RawModel(lambda f, msg: f.error(-1, "SpecMismatch: no such model") if type(msg).__name__ == "Header"
                 else None)
    try:
        with pytest.raises(RemoteError) as e:
            mlbridge.PipeClient(m.base, FEATS, ADV, format=fmt, timeout=5)
        assert str(e.value) == "model refused the session: SpecMismatch: no such model"
        assert e.value.id == -1 and e.value.remote == "SpecMismatch: no such model"
    finally:
        m.close()


def test_duplicate_spec_names_are_refused_before_connecting(tmp_path):
    base = str(tmp_path / "nobody")
    with pytest.raises(ValueError, match=r"^duplicate feature name 'x'$"):
        mlbridge.PipeClient(base, [T("x", "int64_t", [1]), T("x", "float", [1])], ADV, timeout=0.1)
    with pytest.raises(ValueError, match=r"^duplicate advice name 'd'$"):
        mlbridge.PipeClient(base, FEATS, [T("d", "int64_t", [1]), T("d", "int64_t", [1])], timeout=0.1)


TWO = [T("a", "int64_t", [2]), T("b", "float", [1])]


@pytest.mark.parametrize("fmt", ["bitstream", "json"])
def test_features_as_a_dict_a_sequence_or_one_value(serve, fmt):
    """Several features: a dict by name or a sequence in header order (checked
    against the specs); a single feature: its value alone, even a list."""
    srv = serve(lambda obs: int(obs["a"].sum()) + int(obs["b"][0] * 10), sessions=1)
    with mlbridge.PipeClient(srv.base, TWO, ADV, format=fmt, timeout=5) as c:
        assert c.evaluate({"a": [1, 2], "b": [0.5]}).tolist() == [8]
        assert c.evaluate([[3, 4], [1.0]]).tolist() == [17]
        assert c.evaluate(([5, 6], np.array([0.0], np.float32))).tolist() == [11]
        with pytest.raises(SpecMismatch, match=r"^features must be a dict by name or a sequence in header order$"):
            c.evaluate([[3, 4], [1.0], [2.0]])
        with pytest.raises(SpecMismatch, match=r"feature 'a'"):
            c.evaluate([[3, 4, 5], [1.0]])
        assert c.evaluate([[0, 0], [0.0]]).tolist() == [0]   # refusals above sent nothing
    one = [T("x", "int64_t", [2])]
    srv2 = serve(lambda obs: int(obs["x"][0] - obs["x"][1]), sessions=1)
    with mlbridge.PipeClient(srv2.base, one, ADV, format=fmt, timeout=5) as c:
        assert c.evaluate([7, 2]).tolist() == [5]
        assert c.evaluate(np.array([1, 4])).tolist() == [-3]
        with pytest.raises(SpecMismatch, match=r"feature 'x'"):
            c.evaluate([1, 2, 3])


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_bytes_before_the_observation_are_refused(fmt):
    """Bytes the model sent with its acknowledgment, before any observation:
    not taken for the reply; ProtocolError counting them."""
    got = []

    def answer(f, msg):
        got.append(type(msg).__name__)
        if type(msg).__name__ == "Header":
            return f.ack() + b"junk!\n"
        return None
    m = RawModel(answer)
    try:
        with mlbridge.PipeClient(m.base, FEATS, ADV, format=fmt, timeout=5) as c:
            with pytest.raises(ProtocolError, match=r"^the model sent 6 bytes nobody asked for$"):
                c.evaluate({"x": 1})
    finally:
        m.close()
    # nothing sent after the header: not the observation, and no "end" from a client out of step
    assert got == ["Header"]


# ---- run_compiler without a pidfd ----------------------------------------------

@pytest.fixture
def no_pidfd(monkeypatch):
    """A kernel (before 5.3) or a sandbox without pidfd_open: run_compiler
    watches the child with waitid between short idle waits."""
    monkeypatch.delattr(os, "pidfd_open", raising=False)


@pytest.mark.parametrize("fmt", ["bitstream", "json"])
def test_without_pidfd_the_compiler_is_served_to_its_end(no_pidfd, fmt):
    res = mlbridge.run_compiler(cmd(fmt, "ok", 4), policy, timeout=30, env=child_env())
    assert res.returncode == 0 and res.ok and not res.timed_out, res.stderr
    assert res.stdout.decode().split() == ["0", "10", "20", "30"]
    assert res.decisions == 4 and len(res.sessions) == 1


def test_without_pidfd_a_child_that_never_opens_the_channel_ends_the_wait(no_pidfd):
    res = mlbridge.run_compiler(cmd("bitstream", "quiet"), policy, timeout=30, env=child_env())
    assert res.returncode == 0 and res.sessions == [] and b"no decision needed" in res.stdout


@pytest.mark.parametrize("pidfd", [True, False])
def test_exited_tells_a_running_child_from_an_ended_one(monkeypatch, tmp_path, pidfd):
    """_Child.exited: False while the child runs (waiting for a byte in a
    FIFO we have not written yet), True once it has ended; asking does not reap it."""
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    fifo = str(tmp_path / "gate")
    os.mkfifo(fifo)
    gate = os.open(fifo, os.O_RDWR)   # keeps the FIFO open: the child's open never waits, its read does
    try:
        child = supervise._Child([sys.executable, "-c", f"open({fifo!r}, 'rb').read(1)"], None, None)
        try:
            assert (child.pidfd is not None) == (pidfd and hasattr(os, "pidfd_open"))
            # No byte in the FIFO yet: the child cannot have got past its read.
            assert child.exited() is False
            assert child.exited() is False
            os.write(gate, b"x")   # the byte it waits for (kept in the FIFO until it reads it)
            os.waitid(os.P_PID, child.proc.pid, os.WEXITED | os.WNOWAIT)   # blocks until it has exited
            assert child.exited() is True
            assert child.proc.returncode is None   # not reaped by exited()
            assert child.proc.wait() == 0          # reaped (by someone else): still exited
            assert child.exited() is True
        finally:
            rc = child.finish()
    finally:
        os.close(gate)
    assert rc == 0


def test_without_setpriv_the_compiler_runs_as_is(monkeypatch):
    """A Linux without util-linux's setpriv (or another system): the command
    is not wrapped, and the compiler is served as usual."""
    monkeypatch.setattr(supervise, "_SETPRIV", None)
    res = mlbridge.run_compiler(cmd("protobuf", "ok", 2), policy, timeout=30, env=child_env())
    assert res.returncode == 0 and res.stdout.decode().split() == ["0", "10"], res.stderr


def test_run_compiler_returns_with_stdout_a_pipe():
    """The supervisor's own stdout is a pipe (a CI log, `| tee`): nothing in
    how the child's end is noticed may depend on it."""
    script = ("import sys, mlbridge\n"
              f"res = mlbridge.run_compiler([sys.executable, {FAKE!r}, '{{base}}', 'json', 'ok', '2'],"
              " lambda obs: obs['x'], timeout=30)\n"
              "sys.stderr.write(f'{res.returncode} {res.decisions}\\n')\n")
    r = subprocess.run([sys.executable, "-c", script], env=child_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, cwd=PYDIR)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stderr.decode().split()[-2:] == ["0", "2"]


# ---- run_compiler's arguments ----------------------------------------------------

def _tool(tmp_path, name, body):
    """An executable script NAME in tmp_path/bin (found only through a PATH naming that folder)."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(f"#!{sys.executable}\n{body}")
    p.chmod(0o755)
    return str(d)


PDEATHSIG = ("import ctypes\nsig = ctypes.c_int(-1)\n"
             "ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)\n"   # PR_GET_PDEATHSIG
             "print(sig.value)\n")


@pytest.mark.skipif(supervise._SETPRIV is None, reason="no setpriv: compilers are not tied to the supervisor")
def test_a_compiler_found_through_the_childs_path_dies_with_the_supervisor(tmp_path):
    """The command is looked up on the PATH the child gets (``env``), not the
    supervisor's: a compiler found there still gets SIGKILL as its parent-death signal."""
    bindir = _tool(tmp_path, "mlbridge-test-tool", PDEATHSIG)
    assert bindir not in os.environ.get("PATH", "").split(os.pathsep)
    env = child_env(PATH=bindir + os.pathsep + os.environ.get("PATH", os.defpath))
    res = mlbridge.run_compiler(["mlbridge-test-tool"], policy, timeout=30, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [b"9"]   # SIGKILL
    # and a compiler given by its path
    res = mlbridge.run_compiler([os.path.join(bindir, "mlbridge-test-tool")], policy, timeout=30)
    assert res.returncode == 0 and res.stdout.split() == [b"9"], res.stderr


def test_a_command_missing_from_the_childs_path_is_not_found(tmp_path, monkeypatch):
    """Not on the child's PATH (an ``env`` without PATH: the default path) even
    if on the supervisor's: FileNotFoundError, as Popen reports it."""
    bindir = _tool(tmp_path, "mlbridge-test-tool", "print('ran')\n")
    monkeypatch.setenv("PATH", bindir + os.pathsep + os.environ.get("PATH", os.defpath))
    with pytest.raises(FileNotFoundError):
        mlbridge.run_compiler(["mlbridge-test-tool"], policy, timeout=30, env={"HOME": str(tmp_path)})


def test_base_in_environment_values_and_the_working_folder(tmp_path):
    """``{base}`` in an env value is the channel base, as in an argument; ``cwd`` is the child's folder."""
    script = "import os, sys; print(os.getcwd()); print(os.environ['CH']); print(sys.argv[1])"
    res = mlbridge.run_compiler([sys.executable, "-c", script, "{base}"], policy, timeout=30,
                                env=child_env(CH="plugin:{base}:x"), cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    cwd, ch, arg = res.stdout.decode().splitlines()
    assert os.path.samefile(cwd, tmp_path)
    assert "{base}" not in arg and ch == f"plugin:{arg}:x"


def test_the_format_given_is_the_only_one_served():
    """run_compiler(format=...) pins the server's format: a json compiler is refused."""
    res = mlbridge.run_compiler(cmd("json", "remote_error"), policy, timeout=30, format="protobuf", env=child_env())
    assert res.returncode == 3 and res.decisions == 0, res.stderr
    assert b"serves format protobuf" in res.stderr


def test_the_result_of_a_run_ended_by_a_policy_error():
    """Bitstream cannot report a policy error: the compiler is killed and the
    error re-raised, with the partial result (not timed out: killed for the error)."""
    def bad(obs):
        raise RuntimeError("policy bug")

    with pytest.raises(RuntimeError, match="policy bug") as e:
        mlbridge.run_compiler(cmd("bitstream", "spin_on_error"), bad, timeout=60, env=child_env())
    res = e.value.result
    assert res.timed_out is False and res.returncode == -9 and not res.ok
