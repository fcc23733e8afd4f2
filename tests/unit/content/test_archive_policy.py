from repositories.content.archive import ArchivedResource, ArchivePolicy, Usage, select_for_age_off

HOUR = 3600.0


def entries(*ages_and_sizes, now=100 * HOUR):
    return [ArchivedResource(f"r{i}", now - age, size) for i, (age, size) in enumerate(ages_and_sizes)]


def test_defaults_are_nifi_2s():
    policy = ArchivePolicy()
    assert policy.max_retention_s == 3 * HOUR
    assert policy.max_usage == 0.90


def test_age_off_by_time_only_past_retention():
    archived = entries((3 * HOUR + 1, 10), (3 * HOUR - 1, 10), (5 * HOUR, 10))
    chosen = select_for_age_off(archived, 100 * HOUR, ArchivePolicy(), Usage(used=10, total=100))
    assert [entry.key for entry in chosen] == ["r2", "r0"]  # oldest first


def test_age_off_by_usage_removes_oldest_until_under_the_limit():
    archived = entries((1 * HOUR, 30), (2 * HOUR, 30), (0.5 * HOUR, 30))
    # 95 of 100 used; limit 90: removing the oldest (30) is enough.
    chosen = select_for_age_off(archived, 100 * HOUR, ArchivePolicy(), Usage(used=95, total=100))
    assert [entry.key for entry in chosen] == ["r1"]
    chosen = select_for_age_off(archived, 100 * HOUR, ArchivePolicy(), Usage(used=200, total=100))
    assert [entry.key for entry in chosen] == ["r1", "r0", "r2"]


def test_usage_rule_can_be_disabled():
    archived = entries((1 * HOUR, 30))
    policy = ArchivePolicy(max_usage=None)
    assert select_for_age_off(archived, 100 * HOUR, policy, Usage(used=99, total=100)) == []
    assert select_for_age_off(archived, 100 * HOUR, ArchivePolicy(), None) == []


def test_time_rule_counts_toward_usage():
    archived = entries((4 * HOUR, 50), (1 * HOUR, 30))
    # The expired one alone brings 95 down to 45: nothing else goes.
    chosen = select_for_age_off(archived, 100 * HOUR, ArchivePolicy(), Usage(used=95, total=100))
    assert [entry.key for entry in chosen] == ["r0"]
