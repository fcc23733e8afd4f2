"""The order in which Java's `HashSet<String>` (and `HashMap<String, ...>`) iterates,
for the places where NiFi writes what such a set holds in that order (the members of
AttributesToJSON's object), so that Custody writes the same bytes.

Facts of the JDK's HashMap that decide it: a key's bucket is `(h ^ (h >>> 16)) & (n - 1)`
where `h` is `String.hashCode()` (`s[0]*31^(k-1) + ... + s[k-1]` over the UTF-16 code
units, in 32 bits) and `n` the table's size, a power of two; `new HashSet<>(c)` starts
with the smallest power of two at least `c`, and the table doubles whenever it holds
more than three quarters of its size. A table is iterated bucket by bucket, and a
bucket's keys in the order they were added (a doubling keeps that order). A bucket of
eight or more keys turns into a tree in the JDK; that needs eight names of one set to
collide and is not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable


def string_hash(text: str) -> int:
    """Java's `String.hashCode()`, as an unsigned 32-bit number."""
    code = 0
    units = text.encode("utf-16-be")
    for index in range(0, len(units), 2):
        code = (31 * code + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return code


def table_size(initial_capacity: int, entries: int) -> int:
    """The size of the table of `new HashSet<>(initial_capacity)` once `entries` keys
    were added."""
    size = 1
    while size < initial_capacity:
        size <<= 1
    while entries > size * 3 // 4:  # the threshold, (int) (size * 0.75)
        size <<= 1
    return size


def hash_set_order(names: Iterable[str], initial_capacity: int | None = None) -> list[str]:
    """`names` (each once, in the order they were added) in the order a Java HashSet
    made with `initial_capacity` (by default, the number of names) iterates them."""
    added = list(dict.fromkeys(names))
    size = table_size(len(added) if initial_capacity is None else initial_capacity, len(added))

    def bucket(name: str) -> int:
        code = string_hash(name)
        return (code ^ (code >> 16)) & (size - 1)

    return sorted(added, key=lambda name: bucket(name))  # sorted() is stable: a bucket keeps its order
