"""The intake decisions, pure: what a source takes, lists and remembers, and what its
next committed state is. No file, socket or clock here: the processors pass in what
they found and the time, and carry the answer out (see `flow.processors.intake`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from .format import CommittedKey, FileIdentity, IntakeState, ListingMark, TakenFile

# What to do with a request that carries an idempotency key (`key_decision`).
NEW, REPLAY, REUSED = "new", "replay", "reused"


def choose_files(
    found: Iterable[tuple[FileIdentity, object]], state: IntakeState, claimed: Collection[FileIdentity], limit: int
) -> list[tuple[FileIdentity, object]]:
    """Up to `limit` of `found` (identity, anything) in their order: never a file the
    committed state records as taken (its FlowFile exists; only its delete is pending)
    nor one a session of this processor holds now (`claimed`)."""
    chosen: list[tuple[FileIdentity, object]] = []
    seen: set[FileIdentity] = set()
    for identity, item in found:
        if len(chosen) >= limit:
            break
        if identity in state.taken or identity in claimed or identity in seen:
            continue
        seen.add(identity)
        chosen.append((identity, item))
    return chosen


def state_after_commit(
    committed: IntakeState, taken: Iterable[TakenFile], completed: Collection[FileIdentity]
) -> tuple[IntakeState, frozenset[FileIdentity]]:
    """The state a session commits: the committed records, less those whose delete or
    move is durable (`completed`: pruned now), plus the files this session takes.
    Returns it and the identities it prunes."""
    pruned = frozenset(identity for identity in committed.taken if identity in completed)
    records = {identity: record for identity, record in committed.taken.items() if identity not in pruned}
    for record in taken:
        records[record.identity] = record
    return committed.replace(taken=records), pruned


def orphans(
    state: IntakeState, claimed: Collection[FileIdentity], completed: Collection[FileIdentity]
) -> list[TakenFile]:
    """The records no session of this process owns nor has completed: left by an earlier
    run (a crash between the commit and the delete) or by a delete that failed. They are
    finished before anything new is taken."""
    return [record for identity, record in state.taken.items() if identity not in claimed and identity not in completed]


def list_new(found: Iterable[tuple[str, int]], mark: ListingMark) -> tuple[list[str], ListingMark]:
    """ListFile's decision: of `found` (path, modification time in ms), those not listed
    yet - newer than the mark, or as new as it and not among its paths - and the mark
    after listing them (unchanged when there are none)."""
    listed = [
        (path, mtime_ms)
        for path, mtime_ms in found
        if mtime_ms > mark.timestamp_ms or (mtime_ms == mark.timestamp_ms and path not in mark.paths)
    ]
    if not listed:
        return [], mark
    newest = max(mtime_ms for _, mtime_ms in listed)
    paths = {path for path, mtime_ms in listed if mtime_ms == newest}
    if newest == mark.timestamp_ms:
        paths |= mark.paths
    return [path for path, _ in listed], ListingMark(newest, frozenset(paths))


def recent_keys(keys: Mapping[str, CommittedKey], now_ms: int, max_age_ms: int) -> dict[str, CommittedKey]:
    """The idempotency keys committed less than `max_age_ms` ago."""
    return {key: committed for key, committed in keys.items() if now_ms - committed.committed_ms < max_age_ms}


def key_decision(key: str, fingerprint: str, committed: Mapping[str, CommittedKey]) -> str:
    """What a request with idempotency `key` and payload `fingerprint` gets, by the IETF
    Idempotency-Key draft: NEW (taken: no request with the key was committed), REPLAY
    (answered 200, not taken again: the committed request had this payload, or its
    fingerprint is unknown, from layout version 1) or REUSED (answered 422: the key was
    committed with another payload)."""
    first = committed.get(key)
    if first is None:
        return NEW
    return REPLAY if first.fingerprint in (None, fingerprint) else REUSED


def remember_keys(
    keys: Mapping[str, CommittedKey], new: Mapping[str, str], now_ms: int, *, max_count: int, max_age_ms: int
) -> dict[str, CommittedKey]:
    """The keys to commit with the `new` ones (key -> fingerprint): the recent ones and the
    new ones, at most `max_count`, the oldest dropped first (a retry of a dropped key is
    taken again)."""
    kept = recent_keys(keys, now_ms, max_age_ms)
    for key, fingerprint in new.items():
        kept[key] = CommittedKey(now_ms, fingerprint)
    if len(kept) > max_count:
        kept = dict(sorted(kept.items(), key=lambda item: item[1].committed_ms)[len(kept) - max_count :])
    return kept


def hand_over(previous: IntakeState, current: IntakeState) -> IntakeState:
    """One intake state from a processor's state in a previous incarnation's shard and
    its state in the new one: every record of either (the new run finishes the old run's
    deletes, and takes none of those files), the later listing mark, every key as its
    latest commit recorded it."""
    taken = {**previous.taken, **current.taken}
    listing = current.listing
    if previous.listing.timestamp_ms > listing.timestamp_ms:
        listing = previous.listing
    elif previous.listing.timestamp_ms == listing.timestamp_ms:
        listing = ListingMark(listing.timestamp_ms, listing.paths | previous.listing.paths)
    keys = dict(previous.keys)
    for key, committed in current.keys.items():
        if key not in keys or committed.committed_ms >= keys[key].committed_ms:
            keys[key] = committed
    return IntakeState(taken, listing, keys)
