"""Phase ordering: the problem as the corpus commands and ``mlbridge tune`` serve
it (``problem.py``), and the POSET-RL pass in ``opt-19`` (``poset.py``: its model
contract, the commands around it, sizes, a linear policy's ONNX export), which
examples/phase_ordering/ trains.

Importing this package imports nothing: the registry (``mlbridge.problems``)
needs the definition only."""
