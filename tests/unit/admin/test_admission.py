"""What the admin API admits before routing, as pure rules: the names it answers to
(DNS rebinding), which browser requests are cross-site, and a body's declared length."""

import pytest

from cluster.admin.admission import (
    AllowedHosts,
    HostNameRefused,
    cross_site,
    declared_body_length,
    host_of_url,
    normal_host,
    same_origin,
)

LOOPBACK = AllowedHosts.of("127.0.0.1", loopback=True)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:8080", "localhost.:1", "[::1]:8080", "127.0.0.2", None],
)
def test_a_loopback_bind_answers_to_loopback_names(host):
    assert LOOPBACK.allows(host)


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:8080",
        "127.0.0.1.attacker.example",
        "localhost.attacker.example",
        "10.0.0.5",
        "",
        ":8080",
        "127.0.0.1:99999",
        "127.0.0.1:80x",
        "[::1",
        "::1",
        "a b",
        "127.0.0.1/x",
    ],
)
def test_a_loopback_bind_refuses_any_other_name_and_malformed_hosts(host):
    assert not LOOPBACK.allows(host)


def test_configured_and_announced_names_are_answered_to_and_nothing_else():
    hosts = AllowedHosts.of(
        "0.0.0.0", loopback=False, names=["Custody1.Example.ORG."], announced="http://custody2:8080"
    )
    for host in ("custody1.example.org:8080", "custody2", "10.1.2.3:8080", "[fd00::1]:80", "localhost"):
        assert hosts.allows(host), host
    assert not hosts.allows("attacker.example")
    assert "custody1.example.org" in hosts.describe() and "custody2" in hosts.describe()


def test_a_specific_address_answers_to_itself_and_a_star_to_anything():
    hosts = AllowedHosts.of("10.0.0.5", loopback=False)
    assert hosts.allows("10.0.0.5:8080") and not hosts.allows("10.0.0.6") and not hosts.allows("localhost")
    assert AllowedHosts.of("10.0.0.5", loopback=False, names=["*"]).allows("anything.example")
    assert AllowedHosts.of("node1.internal", loopback=False).allows("NODE1.internal:8080")


@pytest.mark.parametrize("text", ["http://custody1", "custody1:8080", "custody1/admin", "", "a b", "user@host"])
def test_a_configured_name_must_be_bare(text):
    with pytest.raises(HostNameRefused, match="no scheme, port or path"):
        normal_host(text)


@pytest.mark.parametrize(
    "url, host",
    [("http://custody1:8080", "custody1"), ("10.0.0.1:8080", "10.0.0.1"), ("https://[::1]:8443/", "::1"), ("", None)],
)
def test_the_announced_address_gives_its_host(url, host):
    assert host_of_url(url) == host


@pytest.mark.parametrize(
    "origin, host, same",
    [
        ("http://127.0.0.1:8080", "127.0.0.1:8080", True),
        ("http://[::1]:8080", "[::1]:8080", True),
        ("https://custody.example", "custody.example", True),  # a TLS proxy in front: the default port
        ("http://custody.example", "custody.example:80", True),
        ("http://localhost:8080", "127.0.0.1:8080", False),  # another origin, though the same machine
        ("http://127.0.0.1:8081", "127.0.0.1:8080", False),
        ("http://attacker.example", "127.0.0.1:8080", False),
        ("null", "127.0.0.1:8080", False),  # a sandboxed frame, a file
        ("http://127.0.0.1:8080/page", "127.0.0.1:8080", False),  # not an origin
        ("ftp://127.0.0.1:8080", "127.0.0.1:8080", False),
        ("http://127.0.0.1:8080", None, False),
    ],
)
def test_an_origin_is_the_request_s_own_when_host_and_port_match(origin, host, same):
    assert same_origin(origin, host) is same


def test_only_a_state_changing_request_from_another_page_is_cross_site():
    foreign, own = "http://attacker.example", "http://127.0.0.1:8080"
    assert cross_site("POST", foreign, "127.0.0.1:8080") and cross_site("delete", foreign, "127.0.0.1:8080")
    assert not cross_site("GET", foreign, "127.0.0.1:8080") and not cross_site("HEAD", foreign, "127.0.0.1:8080")
    assert not cross_site("POST", None, "127.0.0.1:8080")  # curl, the CLI: no Origin
    assert not cross_site("POST", own, "127.0.0.1:8080")


@pytest.mark.parametrize(
    "content_length, transfer_encoding, length",
    [
        (None, None, 0),
        ("0", None, 0),
        ("12", None, 12),
        ("00012", None, 12),
        (None, "chunked", None),
        ("12", "chunked", None),
        ("9" * 5000, None, 1 << 63),
        ("abc", None, None),
    ],
)
def test_a_body_s_declared_length_is_read_without_converting_absurd_numbers(content_length, transfer_encoding, length):
    assert declared_body_length(content_length, transfer_encoding) == length
