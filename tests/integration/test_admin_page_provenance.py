"""The status page's provenance part, read in Debian's headless Chromium (Playwright)
against a real standalone node and its admin API: a search by a FlowFile's uuid finds
its events, a search by component and type pages through the same events the API
pages through (with the first page's `as_of`, while new events arrive), a bad time is
answered with its message and the form keeps its input, a read token's replay is
refused with what to do, and a FlowFile's lineage is drawn whole: every event and
FlowFile the API's lineage has, and every parent -> child edge.

The node runs in this process, with its provenance journals rolled over every second
(`custody run` keeps NiFi's 30 s, and a search finds events once they are indexed).
Screenshots (1366x768 and 1920x1080) go where the page's other tests put theirs.
"""

from __future__ import annotations

import urllib.parse

import pytest

from cluster.admin.client import call
from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import add_token
from cluster.node.standalone import NodeSettings, StandaloneNode
from cluster.services.process import wait_until
from tests.integration.test_admin_page import SEEN_WITHIN_MS, reader  # noqa: F401 - a fixture, used here

PAGE = 20  # the page's PROVENANCE_PAGE
# Each original of three lines is split in three (FORK), and each split goes to two
# connections from one relationship (CLONE): every FlowFile ends auto-terminated (DROP).
FLOW = """
name: traced
processors:
  - id: generate
    type: GenerateFlowFile
    properties: {batch_size: 4, max_count: 200, custom_text: "one\\ntwo\\nthree\\n"}
    scheduling: {run_schedule: 250 ms}
  - {id: split, type: SplitText, properties: {line_split_count: 1}, auto_terminate: [original, failure]}
  - {id: tag, type: UpdateAttribute, properties: {part: "${fragment.index}"}, auto_terminate: [success]}
  - {id: keep, type: UpdateAttribute, properties: {kept: "yes"}, auto_terminate: [success]}
connections:
  - {source: generate, relationships: [success], destination: split}
  - {source: split, relationships: [splits], destination: tag}
  - {source: split, relationships: [splits], destination: keep}
"""
ROWS = "() => [...document.querySelectorAll('#prov-body tr[data-event-id]')].map((tr) => Number(tr.dataset.eventId))"
SHOWN = f"(wanted) => JSON.stringify(({ROWS})()) === JSON.stringify(wanted)"
DRAWN = """() => {
  const svg = document.getElementById('lineage-svg');
  if (!svg) return null;
  return {nodes: [...svg.querySelectorAll('.node')].map((g) => g.dataset.node),
          edges: [...svg.querySelectorAll('.edge')].map((g) => [g.dataset.source, g.dataset.target])};
}"""
# No two boxes of the lineage overlap, and every text stays within its box.
OVERLAPS = """() => {
  const boxes = [...document.querySelectorAll('#lineage-svg .node rect.frame')].map((r) => r.getBoundingClientRect());
  const problems = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b) => {
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) problems.push('boxes overlap');
  }));
  for (const node of document.querySelectorAll('#lineage-svg .node')) {
    const frame = node.querySelector('rect.frame').getBoundingClientRect();
    for (const text of node.querySelectorAll('text')) {
      const r = text.getBoundingClientRect();
      if (r.right > frame.right + 0.5 || r.bottom > frame.bottom + 0.5) problems.push(`${text.textContent} sticks out`);
    }
  }
  return problems;
}"""


def ids(answer: dict) -> list[int]:
    return [event["event_id"] for event in answer["events"]]


@pytest.mark.timeout(180)
def test_the_page_searches_provenance_and_draws_a_flowfiles_lineage(reader, tmp_path):  # noqa: F811
    (tmp_path / "flow.yaml").write_text(FLOW)
    tokens = str(tmp_path / "tokens")
    admin, read = add_token(tokens, "admin", "operator"), add_token(tokens, "read", "page-reader")
    node = StandaloneNode.from_file(
        str(tmp_path / "flow.yaml"), str(tmp_path / "data"), NodeSettings(name="traced", provenance_rollover_s=1.0)
    )
    node.start()
    server = serve(AdminSettings(port=0, token_file=tokens), node.control())
    try:

        def events(**query) -> dict:
            status, answer = call(f"{server.url}/api/v1/provenance/events?{urllib.parse.urlencode(query)}", token=admin)
            assert status == 200, answer
            return answer

        # An original whose whole lineage is indexed: it and every FlowFile it made were dropped.
        def finished_original():
            for fork in events(type="FORK", limit=5)["events"]:
                status, lineage = call(f"{server.url}/api/v1/provenance/lineage/{fork['flowfile_uuid']}", token=admin)
                flowfiles = {n["flowfile_uuid"] for n in lineage["nodes"] if n["kind"] == "flowfile"}
                dropped = {n["flowfile_uuid"] for n in lineage["nodes"] if n.get("event_type") == "DROP"}
                if status == 200 and len(flowfiles) == 1 + 3 + 3 and dropped == flowfiles:
                    return fork["flowfile_uuid"], lineage
            return None

        original, lineage = wait_until(finished_original, 30, "an original's whole lineage indexed")
        wait_until(lambda: events(component="generate", type="CREATE", limit=1)["total"] > 2 * PAGE, 30, "CREATEs")

        page = reader.page
        page.goto(server.url + "/")
        page.fill("#token", read)
        page.click("#login button[type=submit]")
        page.locator("#provenance-form").wait_for(state="visible", timeout=SEEN_WITHIN_MS)

        # A FlowFile's uuid: its events, and the FORK and CLONE events that name it.
        page.fill("#provenance-form input[name=uuid]", original)
        page.click("#provenance-form button[type=submit]")
        page.wait_for_function(SHOWN, arg=ids(events(uuid=original, limit=PAGE)), timeout=SEEN_WITHIN_MS)
        assert {"CREATE", "FORK", "DROP"} <= {
            row.get_attribute("data-type") for row in page.locator("#prov-body tr[data-event-id]").all()
        }
        page.locator("#provenance").scroll_into_view_if_needed()
        reader.screenshots("provenance-search")

        # By component and type: the pages the API gives for the first page's as_of, while
        # generate goes on making FlowFiles.
        page.fill("#provenance-form input[name=uuid]", "")
        page.fill("#provenance-form input[name=component]", "generate")
        page.select_option("#provenance-form select[name=type]", "CREATE")
        page.click("#provenance-form button[type=submit]")
        page.wait_for_function(
            f"() => ({ROWS})().length === {PAGE} && document.getElementById('prov-results').dataset.offset === '0'",
            timeout=SEEN_WITHIN_MS,
        )
        as_of = int(page.locator("#prov-results").get_attribute("data-as-of"))
        first = events(component="generate", type="CREATE", limit=PAGE, offset=0, as_of=as_of)
        assert page.evaluate(ROWS) == ids(first)
        assert page.locator("#prov-summary [data-total]").get_attribute("data-total") == str(first["total"])
        page.click("#prov-next")
        second = events(component="generate", type="CREATE", limit=PAGE, offset=PAGE, as_of=as_of)
        page.wait_for_function(SHOWN, arg=ids(second), timeout=SEEN_WITHIN_MS)
        assert len(ids(second)) == PAGE and max(ids(second)) < min(ids(first))
        assert {row.get_attribute("data-type") for row in page.locator("#prov-body tr[data-event-id]").all()} == {
            "CREATE"
        }
        page.click("#prov-previous")
        page.wait_for_function(SHOWN, arg=ids(first), timeout=SEEN_WITHIN_MS)
        assert page.locator("#prov-previous").is_disabled() and page.locator("#prov-results").get_attribute(
            "data-as-of"
        ) == str(as_of)

        # A time the API cannot read: its message, naming the field; the form keeps its input.
        page.fill("#provenance-form input[name=start]", "yesterday")
        page.click("#provenance-form button[type=submit]")
        page.locator("#prov-error").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
        assert reader.text("#prov-error").startswith("The search was refused: start: ")
        assert page.locator("#provenance-form input[name=start]").get_attribute("aria-invalid") == "true"
        assert page.input_value("#provenance-form input[name=start]") == "yesterday"
        assert page.input_value("#provenance-form input[name=component]") == "generate"
        page.fill("#provenance-form input[name=start]", "1h")
        page.click("#provenance-form button[type=submit]")
        page.locator("#prov-error").wait_for(state="hidden", timeout=SEEN_WITHIN_MS)

        # An event's every field; a read token's replay is refused with what to do.
        page.fill("#provenance-form input[name=component]", "")
        page.select_option("#provenance-form select[name=type]", "")
        page.fill("#provenance-form input[name=uuid]", original)
        page.click("#provenance-form button[type=submit]")
        fork = next(e for e in events(uuid=original, type="FORK")["events"] if e["flowfile_uuid"] == original)
        page.locator(f"#prov-body tr[data-event-id='{fork['event_id']}']").click()
        page.wait_for_function(
            f"() => document.getElementById('prov-event').dataset.eventId === '{fork['event_id']}'",
            timeout=SEEN_WITHIN_MS,
        )
        children = page.locator("#prov-fields dd[data-field=children] code").all_text_contents()
        assert sorted(children) == sorted(fork["child_uuids"])
        assert page.locator("#prov-attributes-body tr[data-attribute=filename]").count() == 1
        page.click("#prov-replay-button")
        page.wait_for_function("() => document.getElementById('prov-replay').className === 'bad'")
        assert reader.text("#prov-replay") == "This token may only read; replay needs a token with the admin role."
        page.locator("#prov-event").scroll_into_view_if_needed()
        reader.screenshots("provenance-event")

        # The lineage: every event and FlowFile of the API's, every parent -> child edge.
        page.click("#prov-lineage-button")
        page.wait_for_function(f"() => ({DRAWN})() !== null", timeout=SEEN_WITHIN_MS)
        drawn = page.evaluate(DRAWN)
        assert sorted(drawn["nodes"]) == sorted(n["id"] for n in lineage["nodes"])
        made = {(link["source"], link["target"]) for link in lineage["links"] if link["source"].startswith("event:")}
        assert len(made) == 3 + 3 and made <= {tuple(edge) for edge in drawn["edges"]}
        assert page.locator("#prov-lineage").get_attribute("data-truncated") == "false"
        assert "truncated" not in reader.text("#prov-lineage-note")
        clone = next(n for n in lineage["nodes"] if n.get("event_type") == "CLONE")
        # Dispatched: a click by Playwright would first scroll the drawing to the node.
        page.locator(f"#lineage-svg .node[data-node='event:{clone['event_id']}']").dispatch_event("click")
        page.wait_for_function(
            f"() => document.getElementById('prov-event').dataset.eventId === '{clone['event_id']}'",
            timeout=SEEN_WITHIN_MS,
        )
        for width, height in ((1366, 768), (1920, 1080)):
            page.set_viewport_size({"width": width, "height": height})
            page.locator("#prov-lineage").scroll_into_view_if_needed()
            assert page.evaluate(OVERLAPS) == [], (width, height)
        reader.screenshots("provenance-lineage")

        # With the admin role, the replay is made: a new FlowFile whose REPLAY event names
        # the clone's FlowFile as its parent.
        page.click("#forget")
        page.fill("#token", admin)
        page.click("#login button[type=submit]")
        page.click("#prov-replay-button")
        page.wait_for_function("() => document.getElementById('prov-replay').className === 'ok'")
        replayed = reader.text("#prov-replay").split()[3]
        assert (
            reader.text("#prov-replay")
            == f"Replayed: new FlowFile {replayed} in queue generate/success/split (shard local)."
        )
        replay = wait_until(
            lambda: next((e for e in events(uuid=replayed, type="REPLAY")["events"]), None), 30, "the REPLAY event"
        )
        assert replay["parent_uuids"] == [clone["flowfile_uuid"]] and replay["child_uuids"] == [replayed]
        assert not reader.errors, reader.errors
    finally:
        server.stop()
        node.stop()
