"""A tiny training round through Ray, end to end: two compiler workers
(stock opt-19 behind mlbridge's gRPC EnvironmentService, token required), two
Ray actors driving them, one ES generation; results must arrive from every
actor and every compiler worker."""
from __future__ import annotations

import numpy as np
import pytest

from ray_support import CORPUS

ray = pytest.importorskip("ray")
pytest.importorskip("grpc")


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
    from mlbridge.gym import CompilerEnv
    with pytest.raises(MLBridgeError, match="UNAUTHENTICATED"):
        CompilerEnv(target=workers[0], token="wrong", step_timeout=10.0)
