"""Java's HashSet order, which NiFi's AttributesToJSON writes its listed names in.
Each expected order is what Java 17 printed for `new HashSet<>(n)` of the names added
in the order given (n the number of names), iterated."""

from __future__ import annotations

import pytest

from flow.java_hash_order import hash_set_order, string_hash, table_size

JAVA_17 = [
    ("doc,name", "name|doc"),
    ("doc,list,half,n,gone", "doc|half|list|n|gone"),
    ("b,missing,a", "missing|a|b"),
    ("a,b,c", "a|b|c"),
    (
        "zeta,alpha,mu,beta,omega,gamma,delta,kappa,lambda,sigma,tau,upsilon,phi",
        "zeta|sigma|upsilon|mu|delta|tau|omega|phi|lambda|alpha|kappa|beta|gamma",
    ),
    (
        "x.1,x.2,x.10,é,日本,item_id,content_SHA-256,filename,uuid",
        "x.10|filename|item_id|é|x.1|content_SHA-256|日本|x.2|uuid",
    ),
]


@pytest.mark.parametrize(("added", "iterated"), JAVA_17)
def test_the_order_is_the_one_java_iterates(added, iterated):
    assert "|".join(hash_set_order(added.split(","))) == iterated


def test_string_hash_is_javas_over_utf16_units():
    # "hello".hashCode() == 99162322; "日本" and a character beyond the BMP as Java has them
    assert string_hash("hello") == 99162322
    assert string_hash("日本") == 26_085 * 31 + 26_412
    assert string_hash("\U0001f600") == (0xD83D * 31 + 0xDE00) & 0xFFFFFFFF
    assert string_hash("polygenelubricants") == (-2147483648) & 0xFFFFFFFF


@pytest.mark.parametrize(
    ("capacity", "entries", "size"),
    [(0, 0, 1), (3, 3, 4), (4, 4, 8), (13, 13, 32), (55, 55, 128), (64, 48, 64), (64, 49, 128)],
)
def test_the_table_doubles_past_three_quarters(capacity, entries, size):
    assert table_size(capacity, entries) == size
