"""The cluster-wide processors and queues (`cluster.admin.fan_out`): the merge of the
members' shard maps, pure; the asking with an injected fetch; and `fetch_json` against
a loopback HTTP server (a refusal and a redirect reported, the token never sent on),
and over HTTPS trusting `[admin] tls_ca` (a member signed by another authority is
reported as untrusted, naming the setting)."""

from __future__ import annotations

import http.server
import json
import ssl
import threading

import pytest

from cluster.admin.fan_out import Asked, MemberAnswer, MemberRefused, ask_members, fetch_json, merge
from cluster.admin.settings import AdminSettings, AdminSettingsRefused
from tests.certificates import self_signed

N1 = Asked("n1", "n1-1", "http://127.0.0.1:1")
N2 = Asked("n2", "n2-4", "http://127.0.0.1:2")
N3 = Asked("n3", "n3-2", "http://127.0.0.1:3")


def items(*names):
    return [{"queue": name} for name in names]


def test_the_members_shard_maps_are_merged_and_every_member_reported():
    answers = [
        MemberAnswer(N2, {"n2-4": items("b")}, None, 20.0),
        MemberAnswer(N1, {"n1-1": items("a"), "n3-1": items("c")}, None, 10.0),
        MemberAnswer(N3, None, "it answered 401: the token is not known to this node"),
    ]
    merged = merge(answers, {"n1-1": "n1-1", "n2-4": "n2-4", "n3-1": "n1-1"})
    assert merged["shards"] == {"n1-1": items("a"), "n2-4": items("b"), "n3-1": items("c")}
    assert list(merged["shards"]) == ["n1-1", "n2-4", "n3-1"]
    assert merged["members"] == [
        {"node": "n1", "incarnation": "n1-1", "admin": N1.admin, "answered": True, "error": None, "answered_at": 10.0},
        {"node": "n2", "incarnation": "n2-4", "admin": N2.admin, "answered": True, "error": None, "answered_at": 20.0},
        {
            "node": "n3",
            "incarnation": "n3-2",
            "admin": N3.admin,
            "answered": False,
            "error": "it answered 401: the token is not known to this node",
            "answered_at": None,
        },
    ]


@pytest.mark.parametrize("owner", ["n1-1", "n2-4", "n3-2"])
def test_a_shard_two_members_report_during_a_takeover_is_taken_from_its_owner(owner):
    answers = [
        MemberAnswer(N1, {"n9-1": items("from n1")}, None, 1.0),
        MemberAnswer(N2, {"n9-1": items("from n2")}, None, 1.0),
        MemberAnswer(N3, {"n9-1": items("from n3")}, None, 1.0),
    ]
    merged = merge(answers, {"n9-1": owner})
    assert merged["shards"]["n9-1"] == items(f"from {owner.split('-')[0]}")
    for order in (answers[::-1], answers[1:] + answers[:1]):
        assert merge(order, {"n9-1": owner})["shards"] == merged["shards"]


def test_a_shard_whose_owner_did_not_report_it_is_taken_from_the_first_member_by_incarnation():
    answers = [MemberAnswer(N2, {"s": items("from n2")}), MemberAnswer(N1, {"s": items("from n1")})]
    assert merge(answers, {"s": "n7-1"})["shards"] == {"s": items("from n1")}
    assert merge(answers, {})["shards"] == {"s": items("from n1")}
    assert merge([], {}) == {"shards": {}, "members": []}


def test_members_are_asked_with_the_callers_token_and_the_node_asked_answers_itself():
    asked = []

    def fetch(url, authorization, timeout_s):
        asked.append((url, authorization, timeout_s))
        if url.startswith(N3.admin):
            raise MemberRefused("no answer within 2 s")
        return {"n2-4": items("b")}

    here = Asked("n1", "n1-1", "")  # its own address is never used
    answers = ask_members(
        [here, N2, N3, Asked("n4", "n4-1", "")],
        "/api/v1/node/queues",
        "Bearer cst_x",
        own="n1-1",
        answer_here=lambda: {"n1-1": items("a")},
        read=lambda document: {shard: list(found) for shard, found in document.items()},
        fetch=fetch,
        clock=lambda: 42.0,
    )
    assert sorted(asked) == [
        ("http://127.0.0.1:2/api/v1/node/queues", "Bearer cst_x", 2.0),
        ("http://127.0.0.1:3/api/v1/node/queues", "Bearer cst_x", 2.0),
    ]
    assert [(a.member.incarnation, a.shards, a.error, a.answered_at) for a in answers] == [
        ("n1-1", {"n1-1": items("a")}, None, 42.0),
        ("n2-4", {"n2-4": items("b")}, None, 42.0),
        ("n3-2", None, "no answer within 2 s", None),
        ("n4-1", None, "it advertises no admin API address ('')", None),
    ]


def test_an_answer_that_cannot_be_read_is_reported_for_its_member():
    def unreadable(document):
        raise ValueError("shard 's' holds no list")

    (answer,) = ask_members([N2], "/p", None, own=None, answer_here=dict, read=unreadable, fetch=lambda *_: {"s": 1})
    assert answer.shards is None and answer.error == "its answer could not be read: ValueError: shard 's' holds no list"


class _Member(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):  # noqa: N802 - http.server's name
        _Member.seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/ok":
            body, status, extra = json.dumps({"s": [{"queue": "q"}]}).encode(), 200, {}
        elif self.path == "/refuses":
            body, status, extra = json.dumps({"error": "the token is not known to this node"}).encode(), 401, {}
        else:
            body, status, extra = b"", 302, {"Location": f"http://127.0.0.1:{self.server.server_port}/ok"}
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


def test_fetch_json_reports_a_refusal_and_follows_no_redirect():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Member)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    _Member.seen = []
    try:
        assert fetch_json(base + "/ok", "Bearer t", 2.0) == {"s": [{"queue": "q"}]}
        with pytest.raises(MemberRefused, match="it answered 401: the token is not known to this node"):
            fetch_json(base + "/refuses", "Bearer t", 2.0)
        with pytest.raises(MemberRefused, match="it answered 302 .* a redirect is not followed"):
            fetch_json(base + "/moved", "Bearer t", 2.0)
    finally:
        server.shutdown()
        server.server_close()
    assert _Member.seen == [("/ok", "Bearer t"), ("/refuses", "Bearer t"), ("/moved", "Bearer t")]
    with pytest.raises(MemberRefused, match="it could not be reached"):
        fetch_json(base + "/ok", None, 2.0)  # closed now


def test_a_member_over_https_is_asked_trusting_tls_ca_and_reported_untrusted_without_it(tmp_path):
    cert, key = self_signed(tmp_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Member)
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert, key)
    server.socket = serving.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"https://127.0.0.1:{server.server_port}/ok"
    try:
        trusting = AdminSettings(tls_ca=cert).member_trust()
        assert fetch_json(url, "Bearer t", 5.0, trusting) == {"s": [{"queue": "q"}]}
        with pytest.raises(MemberRefused, match=r"its certificate is not trusted \(.*\): \[admin\] tls_ca names"):
            fetch_json(url, "Bearer t", 5.0, AdminSettings().member_trust())
    finally:
        server.shutdown()
        server.server_close()


def test_a_tls_ca_that_is_not_pem_certificates_refuses_the_settings(tmp_path):
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    for tls_ca in (str(not_pem), str(tmp_path / "missing.pem")):
        with pytest.raises(AdminSettingsRefused, match=r"\[admin\] tls_ca .* cannot be read as PEM certificates"):
            AdminSettings(tls_ca=tls_ca).check()
