"""PipeClient <-> PipeServer round trips: every dtype, every shape kind, every format."""
from __future__ import annotations

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.core.dtypes import DTYPES

FORMATS = ["bitstream", "json", "protobuf"]
SHAPES = {"scalar": [], "vector": [5], "ndim": [2, 3, 4], "empty": [0], "empty2d": [2, 0]}


def types_of(fmt):
    return [t for t in DTYPES if fmt != "bitstream" or t != "string"]


def values(dtype, shape, seed):
    spec = T("v", dtype, shape)
    rng = np.random.default_rng(seed)
    n = spec.numel
    kind = spec.np_dtype.kind
    if kind == "f":
        flat = rng.standard_normal(n).astype(spec.np_dtype)
        if n >= 4:
            flat[:4] = [np.nan, np.inf, -0.0, np.finfo(spec.np_dtype).max]
    elif kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif kind == "O":
        flat = np.array([f"é\"{i}\\\n{seed}" for i in range(n)], dtype=object)
    else:
        info = np.iinfo(spec.np_dtype)
        flat = rng.integers(info.min, info.max, n, dtype=spec.np_dtype, endpoint=True)
        if n >= 2:
            flat[:2] = [info.min, info.max]
    return flat.reshape(shape)


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.shape == b.shape and a.tobytes() == b.tobytes()
    return a.shape == b.shape and a.dtype == b.dtype and (a.size == 0 or np.array_equal(a, b))



class Echo(mlbridge.Model):
    def on_session_start(self, session):
        self.names = [s.name for s in session.features]

    def __call__(self, obs):
        vals = [obs[n] for n in self.names]
        return vals[0] if len(vals) == 1 else tuple(vals)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape_kind", list(SHAPES))
def test_every_dtype_round_trips(serve, fmt, shape_kind):
    shape = SHAPES[shape_kind]
    specs = [T(f"t_{t}", t, shape) for t in types_of(fmt)]
    st = serve(Echo())
    with mlbridge.PipeClient(st.base, specs, specs, format=fmt, timeout=5) as c:
        c.set_context("fn")
        for seed in range(3):
            feats = {s.name: values(s.dtype, shape, seed) for s in specs}
            got = c.evaluate(feats)
            assert isinstance(got, tuple) and len(got) == len(specs)
            for s, g in zip(specs, got):
                assert g.dtype == s.np_dtype and g.shape == tuple(shape), s
                if s.dtype == "string":
                    assert g.tolist() == feats[s.name].tolist()
                else:
                    assert same(g, feats[s.name]), s
    (sess,) = st.join()
    assert sess.clean and sess.observations == 3 and sess.format == fmt
    assert sess.contexts == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_mib_tensors(serve, fmt):
    # 1 MiB of float64 (bitstream/protobuf) — json too, in float64 which writes fast.
    n = (1 << 20) // 8
    spec = [T("big", "double", [n])]
    adv = [T("sum", "double", [1])]
    st = serve(lambda obs: np.array([obs["big"].sum()]))
    x = np.random.default_rng(1).standard_normal(n)
    with mlbridge.PipeClient(st.base, spec, adv, format=fmt, timeout=20) as c:
        for k in range(2):
            got = c.evaluate({"big": x + k})
            assert got.shape == (1,) and got[0] == pytest.approx((x + k).sum())
    (sess,) = st.join()
    assert sess.clean and sess.observations == 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_mib_echo_exact(serve, fmt):
    # The whole 1 MiB comes back: every byte survives both directions.
    n = 1 << 20
    spec = [T("bytes", "uint8_t", [n])]
    st = serve(Echo())
    x = np.random.default_rng(2).integers(0, 256, n, dtype=np.uint8)
    x[:64] = 10   # newline bytes at the start
    with mlbridge.PipeClient(st.base, spec, spec, format=fmt, timeout=30) as c:
        got = c.evaluate({"bytes": x})
    assert np.array_equal(got, x)
    st.join()


@pytest.mark.parametrize("fmt", FORMATS)
def test_scalar_reply_values(serve, fmt):
    """Policies may return numpy scalars, Python numbers, lists or dicts."""
    answers = iter([np.int64(3), 4, [5], np.array([6], np.int32), {"d": 7}, True])
    st = serve(lambda obs: next(answers))
    with mlbridge.PipeClient(st.base, [T("x", "float", [1])], [T("d", "int64_t", [1])], format=fmt,
                             timeout=5) as c:
        got = [int(c.evaluate({"x": [0.5]})[0]) for _ in range(6)]
    assert got == [3, 4, 5, 6, 7, 1]
    st.join()


@pytest.mark.parametrize("fmt", FORMATS)
def test_several_advice_tensors(serve, fmt):
    adv = [T("index", "int64_t", [1]), T("scores", "float", [3])]
    calls = []

    def policy(obs):
        calls.append(obs.id)
        if obs.id % 2:
            return {"scores": [0.5, 1.5, 2.5], "index": obs.id}
        return (obs.id, np.array([1, 2, 3], np.float32))

    st = serve(policy)
    with mlbridge.PipeClient(st.base, [T("x", "int32_t", [2])], adv, format=fmt, timeout=5) as c:
        i0, s0 = c.evaluate({"x": [1, 2]})
        i1, s1 = c.evaluate({"x": [3, 4]})
    assert i0.tolist() == [0] and s0.tolist() == [1, 2, 3]
    assert i1.tolist() == [1] and s1.tolist() == [0.5, 1.5, 2.5]
    assert calls == [0, 1]
    st.join()


@pytest.mark.parametrize("fmt", FORMATS)
def test_observation_api(serve, fmt):
    seen = {}

    class M(mlbridge.Model):
        def on_session_start(self, session):
            seen["start"] = (session.format, [s.name for s in session.features], session.index)

        def on_context(self, name):
            seen.setdefault("contexts", []).append(name)

        def on_session_end(self, session, clean):
            seen["end"] = (clean, session.observations)

        def __call__(self, obs):
            seen.setdefault("obs", []).append((obs.id, obs.context, sorted(obs.features), "a" in obs))
            assert not obs["a"].flags.writeable
            with pytest.raises(KeyError):
                obs["nope"]
            return 1

    st = serve(M())
    with mlbridge.PipeClient(st.base, [T("a", "int64_t", [1]), T("b", "float", [])],
                             [T("d", "int64_t", [1])], format=fmt, timeout=5) as c:
        c.evaluate({"a": 1, "b": 0.5})
        c.set_context("g")
        c.evaluate({"a": 2, "b": 1.5})
        c.evaluate({"a": 3, "b": 2.5})
    st.join()
    assert seen["start"] == (fmt, ["a", "b"], 0)
    assert seen["contexts"] == ["g"]
    assert seen["obs"] == [(0, "", ["a", "b"], True), (0, "g", ["a", "b"], True), (1, "g", ["a", "b"], True)]
    assert seen["end"] == (True, 3)


@pytest.mark.parametrize("fmt", ["bitstream", "protobuf"])
def test_tensor_bytes_land_aligned(serve, fmt):
    """After the first observation, each record's tensor bytes start 64-byte
    aligned within the buffer (InputBuffer.home), whatever the id's length:
    numpy's fast paths need aligned views. Values stay right across the
    changes (bitstream digits 9 -> 10, 99 -> 100; protobuf's varint id
    127 -> 128)."""
    seen = []

    def policy(obs):
        x = obs["x"]
        seen.append((obs.id, x.flags.aligned, x.ctypes.data % 16, float(x[0])))
        return 0

    st = serve(policy)
    with mlbridge.PipeClient(st.base, [T("x", "float", [7])], [T("d", "int64_t", [1])], timeout=5,
                             format=fmt) as c:
        for i in range(140):
            c.evaluate({"x": np.full(7, i, np.float32)})
    st.join()
    assert [v for _, _, _, v in seen] == list(range(140))
    assert all(aligned and mod == 0 for oid, aligned, mod, _ in seen if oid > 0)


@pytest.mark.parametrize("fmt", ["bitstream", "protobuf", "json"])
def test_retained_views_stay_valid(serve, refcounts, fmt):
    """A policy that keeps the (zero-copy: bitstream, protobuf) views into
    the channel's buffer sees them unchanged later."""
    kept = []

    def policy(obs):
        kept.append(obs["x"])
        return 0

    st = serve(policy)
    with mlbridge.PipeClient(st.base, [T("x", "int64_t", [4])], [T("d", "int64_t", [1])], timeout=5,
                             format=fmt) as c:
        for i in range(50):
            c.evaluate({"x": [i, i + 1, i + 2, i + 3]})
    st.join()
    assert [k.tolist() for k in kept] == [[i, i + 1, i + 2, i + 3] for i in range(50)]
    assert all(not k.flags.writeable for k in kept)


@pytest.fixture(params=["shortcuts", "no shortcuts"])
def refcounts(request, monkeypatch):
    """Both ways the hot loop can run: with the reference-count shortcuts
    (CPython <= 3.13) and without them (other interpreters), where
    transport.channel.reference_count is always 0."""
    if request.param == "no shortcuts":
        from mlbridge.transport import channel, session_server
        monkeypatch.setattr(channel, "reference_count", lambda obj: 0)
        monkeypatch.setattr(session_server, "reference_count", lambda obj: 0)
    return request.param


@pytest.mark.parametrize("fmt", ["bitstream", "protobuf", "json"])
def test_kept_observations_stay_whole(serve, refcounts, fmt):
    """The loop reuses an Observation nobody kept; one the policy keeps
    (every other one here) is never touched again: its id, context and
    features stay those of its own decision."""
    kept = []

    def policy(obs):
        if obs.id % 2 == 0:
            kept.append(obs)
        return int(obs["x"][0]) * 2

    st = serve(policy)
    with mlbridge.PipeClient(st.base, [T("x", "int64_t", [4])], [T("d", "int64_t", [1])], timeout=5,
                             format=fmt) as c:
        answers = [int(c.evaluate({"x": [i, i + 1, i + 2, i + 3]})[0]) for i in range(60)]
    st.join()
    assert answers == [2 * i for i in range(60)]
    assert [o.id for o in kept] == list(range(0, 60, 2))
    assert [o["x"].tolist() for o in kept] == [[i, i + 1, i + 2, i + 3] for i in range(0, 60, 2)]
    assert all(o.features["x"].tolist() == [o.id, o.id + 1, o.id + 2, o.id + 3] for o in kept)
    assert len({id(o) for o in kept}) == len(kept)
