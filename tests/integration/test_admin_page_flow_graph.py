"""The status page's drawing of the flow, read in Debian's headless Chromium
(Playwright) against a real standalone `custody run` node: every processor and
connection of the flow is drawn, and the figures rise while the flow runs.

Screenshots (1366x768 and 1920x1080) go where the page's other tests put theirs
($CUSTODY_ARTIFACTS, by default .work/artifacts/, under admin-page/).
"""

from __future__ import annotations

import pytest

from cluster.admin.client import call
from flow.loading import load_flow
from tests.integration.test_admin_page import SEEN_WITHIN_MS, reader, standalone_admin  # noqa: F401 - a fixture, used here

# A retry loop back to an earlier processor (route <- retry), a self-loop (write's
# failure) and a connection of five FlowFiles at most (log -> write), whose
# destination the test stops to see back-pressure drawn.
FLOW = """
name: drawn
processors:
  - {id: generate, type: GenerateFlowFile, properties: {batch_size: 5}, scheduling: {run_schedule: 500 ms}}
  - {id: tag, type: UpdateAttribute, properties: {kind: hello}}
  - {id: route, type: RouteOnAttribute, properties: {hello: "${kind:equals('hello')}"}}
  - {id: retry, type: UpdateAttribute, properties: {retried: "yes"}}
  - {id: log, type: LogAttribute}
  - {id: write, type: PutFile, properties: {directory: "#{data_dir}/out"}, auto_terminate: [success]}
connections:
  - {source: generate, relationships: [success], destination: tag}
  - {source: tag, relationships: [success], destination: route}
  - {source: route, relationships: [hello], destination: log}
  - {source: route, relationships: [unmatched], destination: retry}
  - {source: retry, relationships: [success], destination: route}
  - {source: log, relationships: [success], destination: write, back_pressure: {object_count: 5}}
  - {source: write, relationships: [failure], destination: write}
"""
DRAWN = """({processors, connections}) => {
  const svg = document.getElementById('flow-svg');
  if (!svg) return false;
  const boxes = [...svg.querySelectorAll('.box[data-processor]')].map((g) => g.dataset.processor);
  const edges = [...svg.querySelectorAll('.edge[data-edge]')].map((g) => g.dataset.edge);
  const labels = [...svg.querySelectorAll('.label[data-label]')].map((g) => g.dataset.label);
  return JSON.stringify(boxes.sort()) === JSON.stringify(processors)
    && JSON.stringify(edges.sort()) === JSON.stringify(connections)
    && JSON.stringify(labels.sort()) === JSON.stringify(connections);
}"""
FIGURE = (
    "({processor, key}) => "
    "Number(document.querySelector(`#flow-svg .box[data-processor='${processor}']`).dataset[key] || 0)"
)
RISEN = f"""({{processor, key, above}}) => ({FIGURE})({{processor, key}}) > above"""
PRESSED = """(edge) => {
  const drawn = document.querySelector(`#flow-svg .edge[data-edge='${edge}']`);
  const label = document.querySelector(`#flow-svg .label[data-label='${edge}']`);
  return drawn.dataset.backPressure === 'true' && label.dataset.backPressure === 'true';
}"""
# No two boxes of the drawing overlap on the screen, and every box's text fits in it.
OVERLAPS = """() => {
  const boxes = [...document.querySelectorAll('#flow-svg .box rect.frame')].map((r) => r.getBoundingClientRect());
  const problems = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b) => {
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) problems.push('boxes overlap');
  }));
  for (const box of document.querySelectorAll('#flow-svg .box')) {
    const frame = box.querySelector('rect.frame').getBoundingClientRect();
    for (const text of box.querySelectorAll('text')) {
      const r = text.getBoundingClientRect();
      if (r.right > frame.right + 0.5 || r.bottom > frame.bottom + 0.5) problems.push(`${text.textContent} sticks out`);
    }
  }
  return problems;
}"""


@pytest.mark.timeout(120)
def test_the_page_draws_the_flow_and_its_figures_rise_while_it_runs(reader, tmp_path):  # noqa: F811
    flow = tmp_path / "drawn.yaml"
    flow.write_text(FLOW)
    definition = load_flow(str(flow), {"data_dir": str(tmp_path / "data")})
    processors = sorted(definition.processors)
    connections = sorted(c.id for c in definition.connections)
    with standalone_admin(str(flow), str(tmp_path / "data"), "drawn") as url:
        page = reader.page
        page.goto(url + "/")
        page.wait_for_function(
            DRAWN, arg={"processors": processors, "connections": connections}, timeout=SEEN_WITHIN_MS
        )
        assert page.locator("#flow-svg").get_attribute("data-nodes") == str(len(processors))
        back = [e.get_attribute("data-edge") for e in page.locator("#flow-svg .edge.back").all()]
        assert back == [next(c.id for c in definition.connections if c.source == "retry")]
        assert "drawn: 6 processors and ports, 7 connections" in reader.text("#flow-note")
        # generate runs twice a second: its tasks rise, and what it made reaches the last processor.
        tasks = page.evaluate(FIGURE, {"processor": "generate", "key": "tasks"})
        page.wait_for_function(
            RISEN, arg={"processor": "generate", "key": "tasks", "above": tasks}, timeout=SEEN_WITHIN_MS
        )
        page.wait_for_function(RISEN, arg={"processor": "write", "key": "in", "above": 0}, timeout=SEEN_WITHIN_MS)
        assert "running" in page.locator("#flow-svg .box[data-processor='write'] .state").text_content()
        # Stopped, write lets its connection fill up to the threshold: drawn in the warning colour.
        assert call(url + "/api/v1/processors/local/write/stop", "POST")[0] == 200
        full = next(c.id for c in definition.connections if c.destination == "write" and c.source == "log")
        page.wait_for_function(PRESSED, arg=full, timeout=SEEN_WITHIN_MS)
        assert page.locator("#flow-svg .edge[data-back-pressure='true']").count() == 1
        assert "stopped" in page.locator("#flow-svg .box[data-processor='write'] .state").text_content()
        for width, height in ((1366, 768), (1920, 1080)):
            page.set_viewport_size({"width": width, "height": height})
            page.locator("#flow").scroll_into_view_if_needed()
            assert page.evaluate(OVERLAPS) == [], (width, height)
        reader.screenshots("flow-graph")
        assert not reader.errors, reader.errors
