"""The incarnation loop: a member that cannot join because of its configuration stops
the node (exit code 2, one fatal event); one that cannot join because a service is
down is retried."""

import threading

from cluster.errors import SessionTimeoutRefused
from cluster.node.events import NodeEvent
from cluster.node.lifecycle import retry_delay, run_incarnations


class Member:
    def __init__(self, error):
        self.error, self.stopped = error, 0

    def start(self):
        raise self.error

    def stop(self, *, leave):
        self.stopped += 1


def test_a_configuration_the_cluster_refuses_stops_the_node_instead_of_rejoining():
    events, made = [], []

    def make():
        made.append(Member(SessionTimeoutRefused("zk:2181", 30.0, 20.0)))
        return made[-1]

    code = run_incarnations(make, lambda kind, **fields: events.append((kind, fields)), retry_pause=0.01)
    assert code == 2 and len(made) == 1 and made[0].stopped == 1
    starting, (kind, fields) = events
    assert starting == (NodeEvent.STARTING, {"attempt": 1})
    assert kind is NodeEvent.START_FAILED and fields["fatal"] is True and "at most 20" in fields["error"]
    assert isinstance(starting[0], NodeEvent)  # typed in the process; its value is what goes on the wire


def test_a_service_that_is_down_is_retried():
    stop, made = threading.Event(), []

    def make():
        made.append(Member(ConnectionError("no quorum")))
        if len(made) == 3:
            stop.set()
        return made[-1]

    events = []
    assert run_incarnations(make, lambda kind, **fields: events.append(fields), stop=stop, retry_pause=0.01) == 0
    assert len(made) == 3 and [fields.get("attempt") for fields in events if "attempt" in fields] == [1, 2, 3]
    assert all(not fields["fatal"] for fields in events if "fatal" in fields)


class RecordingStop(threading.Event):
    """A stop event that records how long each pause between attempts was."""

    def __init__(self, attempts):
        super().__init__()
        self.waits, self.attempts = [], attempts

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if len(self.waits) >= self.attempts:
            self.set()
        return self.is_set()


def test_failed_starts_back_off_doubling_up_to_the_cap():
    stop = RecordingStop(attempts=6)
    assert (
        run_incarnations(
            lambda: Member(ConnectionError("HDFS in safe mode")),
            lambda kind, **fields: None,
            stop=stop,
            retry_pause=1.0,
            retry_max=10.0,
        )
        == 0
    )
    assert stop.waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_retry_delay():
    assert [retry_delay(n, 0.5, 3.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


class DiesAsItJoins:
    """A member whose session ended the moment `start` returned: its client is closed."""

    def __init__(self, epoch):
        self.incarnation = type("Incarnation", (), {"id": f"n1-{epoch}", "epoch": epoch})()
        self.client, self.death_reason, self.leader = None, "session expired", None
        self.dead = threading.Event()
        self.dead.set()
        self.timeline = type("Timeline", (), {"adopted": {}, "retired": {}})()

    def start(self):
        return self.incarnation

    def wait_dead(self, timeout):
        return True

    def stop(self, *, leave):
        pass


def test_a_member_dead_as_it_joins_is_followed_by_a_new_incarnation():
    stop, made, events = threading.Event(), [], []

    def make():
        made.append(DiesAsItJoins(len(made) + 1))
        if len(made) == 2:
            stop.set()
        return made[-1]

    assert run_incarnations(make, lambda kind, **fields: events.append((kind, fields)), stop=stop) == 0
    kinds = [(kind, fields.get("incarnation")) for kind, fields in events if kind != NodeEvent.STARTING]
    assert kinds == [
        (NodeEvent.JOINED, "n1-1"),
        (NodeEvent.DEAD, "n1-1"),
        (NodeEvent.JOINED, "n1-2"),
        (NodeEvent.DEAD, "n1-2"),
    ]
    assert events[1] == (NodeEvent.JOINED, {**events[1][1], "session_id": None})


class JoinsWithASession(DiesAsItJoins):
    """A member that joined with a ZooKeeper session, then died."""

    def __init__(self, epoch, seen_on_join: list):
        super().__init__(epoch)
        self.client = type("Client", (), {"client_id": (0x1234 + epoch, bytes([epoch]) * 16)})()
        self.seen_on_join = seen_on_join


def test_the_session_password_goes_to_a_private_file_never_to_an_event(tmp_path):
    from cluster.node.session_file import read_session_text, session_path

    stop, events, on_disk = threading.Event(), [], []
    path = session_path(str(tmp_path))

    def emit(kind, **fields):
        events.append((kind, fields))
        if kind == NodeEvent.JOINED:  # the file is there, with this incarnation, before the event
            on_disk.append(read_session_text(open(path).read()))

    def make():
        stop.set()
        return JoinsWithASession(7, [])

    assert run_incarnations(make, emit, stop=stop, session_directory=str(tmp_path)) == 0
    [(kind, joined)] = [(k, f) for k, f in events if k == NodeEvent.JOINED]
    assert joined == {"incarnation": "n1-7", "epoch": 7, "session_id": 0x1234 + 7}
    assert bytes([7]).hex() * 16 not in repr(events)
    assert on_disk == [{"incarnation": "n1-7", "session_id": 0x1234 + 7, "session_password": bytes([7]) * 16}]
    assert not (tmp_path / "zookeeper-session").exists()  # the incarnation ended: its session with it


class EndsOnItsConfiguration(DiesAsItJoins):
    """A member whose session guard ended it on a reconnect granted a shorter session timeout."""

    def __init__(self, epoch):
        super().__init__(epoch)
        self.refusal = SessionTimeoutRefused("zk:2181", 4.0, 2.0)


def test_an_incarnation_ended_on_its_configuration_stops_the_node_instead_of_rejoining():
    stop, made, events = threading.Event(), [], []

    def make():
        made.append(EndsOnItsConfiguration(len(made) + 1))
        if len(made) == 3:  # a node that rejoins would go on for ever
            stop.set()
        return made[-1]

    assert run_incarnations(make, lambda kind, **fields: events.append((kind, fields)), stop=stop) == 2
    assert len(made) == 1 and [kind for kind, _ in events] == [NodeEvent.STARTING, NodeEvent.JOINED, NodeEvent.DEAD]
