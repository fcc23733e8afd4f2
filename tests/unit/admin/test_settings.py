"""Where the admin API may listen: never beyond loopback without tokens."""

import pytest

from cluster.admin.settings import AdminSettings, AdminSettingsRefused, is_loopback, parse_address


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_addresses_need_no_tokens(host):
    assert is_loopback(host)
    AdminSettings(bind=host).check()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.7"])
def test_a_non_loopback_bind_without_tokens_is_refused_with_what_to_do(host):
    assert not is_loopback(host)
    with pytest.raises(AdminSettingsRefused, match="custody admin token"):
        AdminSettings(bind=host).check()
    AdminSettings(bind=host, token_file="/etc/custody/tokens").check()


def test_half_a_tls_pair_is_refused():
    with pytest.raises(AdminSettingsRefused, match="tls_cert and tls_key"):
        AdminSettings(tls_cert="node.pem").check()


@pytest.mark.parametrize(
    "text, bind, port",
    [("127.0.0.1:8080", "127.0.0.1", 8080), ("[::1]:9000", "::1", 9000), ("localhost:0", "localhost", 0)],
)
def test_admin_addresses_parse(text, bind, port):
    settings = parse_address(text)
    assert (settings.bind, settings.port) == (bind, port)


@pytest.mark.parametrize("text, words", [("8080", "HOST:PORT"), ("host:http", "not a number"), (":80", "HOST:PORT")])
def test_bad_admin_addresses_say_what_is_wrong(text, words):
    with pytest.raises(AdminSettingsRefused, match=words):
        parse_address(text)
