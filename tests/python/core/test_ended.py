"""core.ended: the one wording of how a child process ended."""
from mlbridge.core.ended import how_it_ended


def test_each_way_a_process_ends_has_its_words():
    assert how_it_ended(None, timed_out=True, timeout=2.0) == "did not finish within 2 s and was killed"
    assert how_it_ended(-9, timed_out=True, timeout=0.5) == "did not finish within 0.5 s and was killed"
    assert how_it_ended(None, timed_out=True) == "timed out and was killed"
    assert how_it_ended(-11) == "was killed by signal 11"
    assert how_it_ended(3) == "failed with exit status 3"
    assert how_it_ended(0) == "exited normally"
