"""HTTP Range headers of the content endpoint (RFC 9110, section 14): what is served
(206 with one range), what is refused (416) and what is ignored (200, the whole)."""

import pytest

from cluster.admin.ranges import ByteRange, RangeNotSatisfiable, parse_range


@pytest.mark.parametrize(
    "header,size,expected",
    [
        ("bytes=0-9", 100, ByteRange(0, 9)),
        ("bytes=10-", 100, ByteRange(10, 99)),
        ("bytes=90-200", 100, ByteRange(90, 99)),  # the end is clamped to the content
        ("bytes=-10", 100, ByteRange(90, 99)),  # the last 10 bytes
        ("bytes=-500", 100, ByteRange(0, 99)),  # a suffix longer than the content: all of it
        ("bytes=99-99", 100, ByteRange(99, 99)),
        ("Bytes = 5 - 6", 100, ByteRange(5, 6)),
    ],
)
def test_one_satisfiable_range_is_served(header, size, expected):
    served = parse_range(header, size)
    assert served == expected
    assert served.content_range(size) == f"bytes {expected.start}-{expected.end}/{size}"
    assert served.length == expected.end - expected.start + 1


@pytest.mark.parametrize(
    "header,size", [("bytes=100-", 100), ("bytes=100-150", 100), ("bytes=-0", 100), ("bytes=0-", 0), ("bytes=-1", 0)]
)
def test_a_range_past_the_end_is_not_satisfiable(header, size):
    with pytest.raises(RangeNotSatisfiable, match=f"the content is {size} bytes") as refused:
        parse_range(header, size)
    assert refused.value.size == size


@pytest.mark.parametrize(
    "header", [None, "", "items=0-1", "bytes=0-1,5-6", "bytes=9-2", "bytes=a-b", "bytes=-", "bytes", "bytes=1-2-3"]
)
def test_what_the_server_does_not_act_on_is_ignored(header):
    assert parse_range(header, 100) is None
