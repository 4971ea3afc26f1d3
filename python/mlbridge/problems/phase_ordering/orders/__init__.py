"""``mlbridge train orders``: a phase-ordering policy for code nobody searched,
learned from ``mlbridge tune`` searches on training projects (Coreset-NVP's
recipe, ICML 2023): the winning orders are candidates (candidates.py), every
training module is compiled with each (labels.py, in-process through the
plugin), a small coreset is chosen greedily and a ranker may pick from it per
module (coreset.py, ranker.py); run.py drives the stages resumably and writes
the policy file the plugin applies (problems/phase_ordering/order_policy.py).
docs/phase-ordering-policy.md."""
