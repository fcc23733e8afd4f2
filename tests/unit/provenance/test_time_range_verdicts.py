"""Which hits of a query by uuid or filename with a time range are decided by the time
range of their event file alone, and which need their own time from the fields runs."""

from __future__ import annotations

import numpy as np

from repositories.provenance.index import time_range_verdicts

# first id -> (last id, min time, max time): three files, ids 1-10, 11-20, 31-40 (21-30 unclaimed).
CLAIMED = {1: (10, 100, 199), 11: (20, 200, 299), 31: (40, 300, 399)}


def verdicts(ids: list[int], start_ms, end_ms) -> tuple[list[bool], list[bool]]:
    inside, check = time_range_verdicts(np.array(ids, dtype=np.uint64), CLAIMED, start_ms, end_ms)
    return inside.tolist(), check.tolist()


def test_a_file_wholly_inside_keeps_its_hits_wholly_outside_drops_them_and_a_straddling_one_checks_them():
    ids = [5, 15, 35]
    assert verdicts(ids, 100, 299) == ([True, True, False], [False, False, False])
    assert verdicts(ids, 150, None) == ([False, True, True], [True, False, False])
    assert verdicts(ids, None, 250) == ([True, False, False], [False, True, False])
    assert verdicts(ids, 199, 200) == ([False, False, False], [True, True, False])
    assert verdicts(ids, 400, 500) == ([False, False, False], [False, False, False])


def test_a_hit_of_no_claimed_file_is_checked():
    assert verdicts([0, 25, 41], 0, 1000) == ([False, False, False], [True, True, True])
    inside, check = time_range_verdicts(np.array([7], dtype=np.uint64), {}, 0, 10)
    assert inside.tolist() == [False] and check.tolist() == [True]
