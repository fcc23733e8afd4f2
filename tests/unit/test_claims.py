import pytest

from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim


@pytest.mark.parametrize("bad", ["..", "../etc", "/etc/passwd", "a/b", "", ".hidden/..", "x" * 200])
def test_resource_id_cannot_escape_container(bad):
    with pytest.raises(InvalidClaimError):
        ResourceClaim("default", 3, bad)


@pytest.mark.parametrize("section", [-1, 1024, "3"])
def test_section_is_bounded(section):
    with pytest.raises(InvalidClaimError):
        ResourceClaim("default", section, "r1")


def test_valid_claim_path():
    claim = ContentClaim(ResourceClaim("disk-1", 17, "1700000000-42"), offset=10, length=5)
    assert claim.resource.relative_path == "disk-1/17/1700000000-42"
    with pytest.raises(InvalidClaimError):
        ContentClaim(claim.resource, offset=-1, length=5)
