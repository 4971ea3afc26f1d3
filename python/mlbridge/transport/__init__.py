"""Local transports to a Python model. One protocol loop (``session_server``:
:class:`SessionServer` over a :class:`SessionChannel`) and its adapters: named
pipes (``channel``, ``pipe_server``; the compiler's end in ``client``) and shared
memory (``shm``); a supervisor that runs a compiler against a policy
(``supervise``). gRPC, in ``rpc/``, shares the session types and life in
``core/session.py``."""
