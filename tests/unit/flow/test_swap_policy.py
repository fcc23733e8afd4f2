"""The swap policy is a pure function: each rule, and the order between them."""

from flow.swap_policy import NOTHING, Demote, Promote, ReadSwapFile, SwapState, WriteSwapFile, in_swap_mode, plan_swap


def state(active=0, staging=0, files=0, in_flight=False, threshold=20_000, batch=10_000):
    return SwapState(active, staging, files, in_flight, threshold, batch)


def test_nothing_below_the_threshold():
    assert plan_swap(state(active=20_000)) is NOTHING


def test_past_the_threshold_the_excess_is_demoted_then_written_in_batches():
    assert plan_swap(state(active=35_000)) == Demote(15_000)
    assert plan_swap(state(active=20_000, staging=15_000)) == WriteSwapFile(10_000)
    assert plan_swap(state(active=20_000, staging=5_000, files=1)) is NOTHING


def test_swap_in_when_a_whole_batch_fits():
    assert plan_swap(state(active=10_001, files=2)) is NOTHING
    assert plan_swap(state(active=10_000, files=2)) == ReadSwapFile()


def test_staging_is_promoted_only_when_no_swap_file_is_older():
    assert plan_swap(state(active=0, staging=5_000, files=1)) == ReadSwapFile()
    assert plan_swap(state(active=100, staging=5_000, files=0)) == Promote(5_000)
    assert plan_swap(state(active=18_000, staging=5_000, files=0)) == Promote(2_000)


def test_one_action_at_a_time():
    assert plan_swap(state(active=0, staging=50_000, files=3, in_flight=True)) is NOTHING


def test_arrivals_wait_in_staging_while_anything_is_swapped():
    assert not in_swap_mode(state(active=5))
    assert in_swap_mode(state(files=1))
    assert in_swap_mode(state(staging=1))
    assert in_swap_mode(state(in_flight=True))
