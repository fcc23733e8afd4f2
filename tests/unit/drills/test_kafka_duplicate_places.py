"""Where the Kafka drill says a duplicated key was read: the output record's place and
time, the input record it was made of and the FlowFile that sent it (the headers the
workload's flow stamps), so that a report tells one FlowFile sent twice from one input
record taken twice."""

from __future__ import annotations

from cluster.drills.kafka_workload import record_place


class _Message:
    def __init__(self, headers):
        self._headers = headers

    def headers(self):
        return self._headers

    def timestamp(self):
        return (1, 1_796_487_795_278)

    def topic(self):
        return "run-out"

    def partition(self):
        return 3

    def offset(self):
        return 1234


def test_a_place_names_the_input_record_and_the_flowfile_from_the_headers():
    message = _Message([("drill.stage", b"stamped"), ("drill.input", b"run-in[0]@17"), ("drill.flowfile", b"f-1")])
    assert record_place(message) == "run-out[3]@1234 at 1796487795.278, made of run-in[0]@17, by FlowFile f-1"


def test_a_record_without_the_stamps_is_placed_all_the_same():
    assert record_place(_Message(None)) == "run-out[3]@1234 at 1796487795.278, made of ?, by FlowFile ?"


def test_the_progress_records_of_a_duplicates_flowfiles_are_read_once_each(monkeypatch):
    from cluster.drills import kafka_workload

    asked: list[set[str]] = []

    def naming(bootstrap_servers, topic, flowfiles):
        asked.append(set(flowfiles))
        return {"f-1": f"named by id-a {topic}[3]@7 at 1.000 committed"}

    class Output:
        places = {"k1": ["out[0]@1 at 1.000, made of in[0]@1, by FlowFile f-1"] * 2}

        def duplicates(self):
            return dict(self.places)

    monkeypatch.setattr(kafka_workload, "progress_naming", naming)
    workload = kafka_workload.KafkaWorkload("127.0.0.1:9", "run", 3)
    workload.output = Output()
    assert workload.duplicates() == {
        "k1": [
            "out[0]@1 at 1.000, made of in[0]@1, by FlowFile f-1; named by id-a run-progress[3]@7 at 1.000 committed"
        ]
        * 2
    }
    Output.places["k2"] = ["out[1]@4 at 2.000, made of in[1]@2, by FlowFile f-2"] * 2
    assert workload.duplicates()["k2"][0].endswith("by FlowFile f-2; named by no progress record")
    workload.duplicates()
    assert asked == [{"f-1"}, {"f-2"}]
    workload.output = None
    assert workload.duplicates() == {} and len(asked) == 2
