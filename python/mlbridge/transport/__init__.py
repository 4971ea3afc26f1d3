"""Local transports to a Python model: named pipes (``channel``, ``server``, ``client``),
shared memory (``shm``), and a supervisor that runs a compiler against a policy
(``supervise``)."""
