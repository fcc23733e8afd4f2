"""The admin API's token file: hashes only, roles, and every malformed line refused by
line number."""

import os
import stat

import pytest

from cluster.admin.tokens import TokenFileError, Tokens, add_token, allows, token_digest


def test_a_created_token_is_stored_as_its_hash_only_and_identifies_its_entry(tmp_path):
    path = str(tmp_path / "tokens")
    reader = add_token(path, "read", "grafana")
    operator = add_token(path, "admin", "ops")
    text = open(path).read()
    assert reader not in text and operator not in text
    assert token_digest(reader).hex() in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    tokens = Tokens.load(path)
    assert tokens.identify(reader).name == "grafana" and tokens.identify(reader).role == "read"
    assert tokens.identify(operator).role == "admin"
    assert tokens.identify(reader + "x") is None and tokens.identify("") is None and tokens.identify(None) is None


def test_admin_may_do_what_read_may_and_not_the_reverse():
    assert allows("admin", "read") and allows("admin", "admin") and allows("read", "read")
    assert not allows("read", "admin")


@pytest.mark.parametrize(
    "line, words",
    [
        ("admin ops", ["line 2", "got 2 fields"]),
        ("root ops sha256:" + "0" * 64, ["line 2", "'root'"]),
        ("read ops md5:" + "0" * 32, ["line 2", "sha256:<64 hex digits>"]),
        ("read ops sha256:" + "z" * 64, ["line 2", "not hexadecimal"]),
    ],
)
def test_a_malformed_line_is_refused_with_its_number(tmp_path, line, words):
    path = tmp_path / "tokens"
    path.write_text("# the team's tokens\n" + line + "\n")
    with pytest.raises(TokenFileError) as raised:
        Tokens.load(str(path))
    for word in words:
        assert word in str(raised.value)


def test_a_missing_or_empty_file_says_how_to_create_a_token(tmp_path):
    with pytest.raises(TokenFileError, match="custody admin token --file"):
        Tokens.load(str(tmp_path / "absent"))
    (tmp_path / "empty").write_text("# nothing yet\n\n")
    with pytest.raises(TokenFileError, match="holds no token"):
        Tokens.load(str(tmp_path / "empty"))


@pytest.mark.parametrize("role, name", [("owner", "x"), ("read", ""), ("read", "two words"), ("read", "a#b")])
def test_bad_roles_and_names_are_refused_before_anything_is_written(tmp_path, role, name):
    path = tmp_path / "tokens"
    with pytest.raises(TokenFileError):
        add_token(str(path), role, name)
    assert not path.exists()
