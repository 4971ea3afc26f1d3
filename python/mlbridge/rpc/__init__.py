"""gRPC, both directions: a model server for compilers (``model_server``), clients
(``clients``), a compiler worker for remote trainers (``environment_server``), and
a pool of workers (``workers``). Needs grpcio; nothing here is imported by
``import mlbridge``."""
