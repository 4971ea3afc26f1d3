"""A tiny training round through Ray, end to end: two compiler workers
(stock opt-19 behind mlbridge's gRPC EnvironmentService, token required), two
Ray actors driving them, one ES generation; results must arrive from every
actor and every compiler worker."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ray_support import CORPUS

import ray  # noqa: E402  required (python/requirements-dev.txt): missing fails, never skips
import grpc  # noqa: E402,F401


@pytest.fixture
def workers(need_llvm):
    import train_ray
    procs = train_ray.start_local_workers(2, CORPUS[:2], token="s3cret")
    yield [p.target for p in procs]
    for p in procs:
        p.kill()
        p.wait()
        p.stdout.close()


def test_one_es_generation_through_ray_actors(workers):
    import train_ray
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=train_ray.runtime_env(),
             log_to_driver=False, configure_logging=False)
    try:
        logs = []
        res = train_ray.train(workers, episodes=2, generations=1, pairs=1, budget_s=None, token="s3cret",
                              log=logs.append)
    finally:
        ray.shutdown()
    assert len(logs) == 1 and len(res["history"]) == 1
    assert res["targets"] == sorted(workers)              # every compiler worker answered
    assert len(res["actors"]) == 2                         # ... through both Ray actors
    assert len(res["results"]) == 3                        # mean + one antithetic pair
    assert res["final"]["text_size"] > 0 and not res["final"]["errors"]
    for r in res["results"]:
        assert not r["errors"], r["errors"]
        assert r["text_size"] > 0 and r["baseline_size"] > 0
        assert np.isfinite(r["fitness"])
        # fitness = mean relative saving against LLVM's heuristic, per file
        assert -1.0 < r["fitness"] < 1.0
    assert len(res["best"]) == len(res["names"]) + 1 >= 39


def test_wrong_token_is_refused(workers):
    from mlbridge import MLBridgeError
    from mlbridge.train.gym import CompilerEnv
    with pytest.raises(MLBridgeError, match="UNAUTHENTICATED"):
        CompilerEnv(target=workers[0], token="wrong", step_timeout=10.0)


def test_mutual_tls_workers_need_the_actors_client_certificate(need_llvm, tmp_path):
    # Across machines the workers demand TLS and a client certificate: the
    # certificate travels to the Ray actors as bytes; an actor without one is refused.
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from grpc_support import make_certs
    import train_ray
    certs = make_certs(str(tmp_path))
    pem = {k: str(tmp_path / f"{k}.pem") for k in certs}
    procs = train_ray.start_local_workers(1, CORPUS[:1], token="s3cret", extra_args=[
        "--tls-cert", pem["server_cert"], "--tls-key", pem["server_key"], "--tls-client-ca", pem["ca"]])
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=train_ray.runtime_env(),
             log_to_driver=False, configure_logging=False)
    try:
        target = procs[0].target
        good = train_ray.RolloutWorker.remote(target, "s3cret", {
            "root_ca": certs["ca"], "cert_chain": certs["client_cert"], "private_key": certs["client_key"]})
        assert len(ray.get(good.feature_names.remote(), timeout=60)) >= 38
        bad = train_ray.RolloutWorker.remote(target, "s3cret", {"root_ca": certs["ca"]})
        with pytest.raises(ray.exceptions.RayError) as ei:
            ray.get(bad.feature_names.remote(), timeout=60)
        assert "UNAVAILABLE" in str(ei.value), str(ei.value)   # the TLS handshake is refused
    finally:
        ray.shutdown()
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
