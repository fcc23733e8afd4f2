"""The status page's failover phases, flow versions and late members
(`cluster.admin.page_cluster`): its pure functions run in headless Chromium on the
page's own script, with no node behind it (the page's requests fail, and are left
to fail). The page on a real cluster is test_admin_page.py's."""

from __future__ import annotations

import pytest

from cluster.admin.page import render_page

DONE = {
    "plan": "n1-1",
    "dead": "n1-1",
    "last_seen_at": 1000.0,
    "detection_s": 2.0,
    "detected_at": 1002.0,
    "taken_over_at": 1005.0,
    "takeover_s": 3.0,
    "resumed_at": 1006.5,
    "resume_s": 4.5,
    "finished_at": 1004.0,
    "finish_s": 2.0,
    "shards": ["n1-1"],
}


# The page needs an http origin (sessionStorage); Playwright answers its requests itself,
# so nothing leaves the browser: the document, and a 503 for every API call.
ORIGIN = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def page(chromium):
    """One page for the module: the functions tested keep no state between calls."""
    context = chromium.new_context()
    opened = context.new_page()

    def answer(route):
        if route.request.url == ORIGIN + "/":
            route.fulfill(status=200, content_type="text/html", body=render_page("n1", tokens_required=False))
        else:
            route.fulfill(status=503, content_type="application/json", body='{"error": "no node", "status": 503}')

    opened.route(ORIGIN + "/**", answer)
    opened.goto(ORIGIN + "/")
    opened.wait_for_function("() => typeof heartbeatCell === 'function' && $('problem').textContent !== ''")
    yield opened
    context.close()


def phases(page, failover, now):
    return page.evaluate(
        "([f, now]) => failoverPhases(f, now).map((p) => [p.phase, p.state, p.seconds])", [failover, now]
    )


def test_a_failover_is_three_phases_one_after_the_other(page):
    expected = [["detection", "done", 2.0], ["takeover", "done", 3.0], ["resume", "done", 1.5]]
    assert phases(page, DONE, 2000.0) == expected
    assert page.evaluate("(f) => phasesSpan(failoverPhases(f, 2000))", DONE) == 6.5


def test_a_plan_written_before_last_seen_at_has_no_detection_phase(page):
    old = {**DONE, "last_seen_at": None, "detection_s": None}
    assert phases(page, old, 2000.0)[0] == ["detection", "unknown", None]


def test_phases_not_over_are_in_progress_for_as_long_as_they_lasted_so_far(page):
    adopting = {**DONE, "taken_over_at": None, "takeover_s": None, "resumed_at": None, "resume_s": None}
    assert phases(page, adopting, 1010.0)[1:] == [["takeover", "running", 8.0], ["resume", "waiting", None]]
    taken = {**DONE, "resumed_at": None, "resume_s": None}
    assert phases(page, taken, 1010.0)[2] == ["resume", "running", 5.0]
    # A failover stuck for an hour stretches the scale by a minute only.
    assert page.evaluate("(f) => phasesSpan(failoverPhases(f, 1002 + 3600))", adopting) == 62.0


def test_the_bar_draws_each_phase_as_wide_as_its_share_of_the_longest_failover(page):
    widths = page.evaluate(
        """(f) => {
          const [track] = timelineBar(failoverPhases(f, 2000), 13);
          track.style.width = "260px";
          document.body.append(track);
          return [...track.children].map((s) => [s.dataset.phase, s.dataset.seconds,
                                                 Math.round(s.getBoundingClientRect().width)]);
        }""",
        DONE,
    )
    assert widths == [["detection", "2.00", 40], ["takeover", "3.00", 60], ["resume", "1.50", 30]]


def test_flow_versions_are_said_once_when_they_agree_and_per_shard_when_they_differ(page):
    said = """(shards) => { const versions = renderFlowVersions(shards);
      return [$("shards-flow").textContent, versions.size,
              shards.map((s) => { const cell = el("td", {}, flowVersionCell(s, versions));
                                  return cell.textContent; })]; }"""
    same = [{"shard": s, "state": "active", "flow_version": "a1b2"} for s in ("n1-1", "n2-1")]
    text, size, cells = page.evaluate(said, same)
    assert (text, size, cells) == ("every live shard runs flow version a1b2", 1, ["a1b2", "a1b2"])
    rolling = [*same, {"shard": "n3-1", "state": "active", "flow_version": "c3d4"}]
    text, size, cells = page.evaluate(said, rolling)
    assert size == 2 and "a1b2 on 2 shards; c3d4 on n3-1" in text
    assert cells == ["a1b2", "a1b2", "c3d4differs"]


def test_a_late_member_shows_when_it_was_last_heard_of(page):
    cell = page.evaluate(
        """() => { const span = el("span", {class: "heartbeat", "data-at": 1000});
          const row = el("tr", {}, el("td", {}, span));
          heartbeatCell(span, 14);
          const late = [span.textContent, row.dataset.late, span.classList.contains("late")];
          heartbeatCell(span, 1.2);
          return [late, [span.textContent, row.dataset.late]]; }"""
    )
    late, fresh = cell
    clock = page.evaluate("() => clock(1000)")
    assert late == [f"late: last heard {clock}", "true", True]
    assert fresh == ["1.2 s ago", "false"]


def test_the_cluster_flow_names_each_member_that_did_not_answer_with_the_age_of_its_figures(page):
    members = page.evaluate(
        """() => { const now = Date.now() / 1000;
          renderFlowMembers([
            {node: "n1", incarnation: "n1-1", admin: "", answered: true, error: null, answered_at: now},
            {node: "n2", incarnation: "n2-1", admin: "", answered: false, error: "timed out", answered_at: now - 12},
            {node: "n3", incarnation: "n3-1", admin: "", answered: false, error: "refused", answered_at: null}]);
          return [...$("flow-members").children].map((span) => [span.dataset.answered || "", span.textContent]); }"""
    )
    assert members == [
        ["", "figures of 1 of 3 members:"],
        ["true", "n1"],
        ["false", "n2: no answer (timed out), figures from 12 s ago"],
        ["false", "n3: no answer (refused), not included"],
    ]
