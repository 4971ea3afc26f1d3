"""What the trainers of every problem share: Gymnasium environments (``gym``),
policies (``policy``), whole-episode rollouts (``rollout``), evolution
strategies (``es``), PPO (``ppo``), imitation (``imitation``), where compiles
run (``compiles``), how a recipe shows progress (``stage``); ``run_folder``
checks what a run's folder holds, ``run_report`` writes ``mlbridge train
report``'s page. The recipes of ``mlbridge train`` live with their problem
(``mlbridge.problems.inlining``: run, search, room; ``mlbridge.problems.eviction``:
its trainer). The compiler worker for remote trainers is
``mlbridge.rpc.environment_server``. See docs/training.md."""
from __future__ import annotations

from .es import es_train
from .policy import LinearPolicy
from .rollout import EpisodeStats, evaluate, outcome_reward, run_episode

__all__ = ["LinearPolicy", "es_train", "evaluate", "run_episode", "EpisodeStats", "EnvironmentServer",
           "outcome_reward"]


def __getattr__(name: str):  # the gRPC worker needs grpcio: import it on first use
    if name == "EnvironmentServer":
        from ..rpc.environment_server import EnvironmentServer
        return EnvironmentServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

