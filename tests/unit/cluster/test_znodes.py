"""Reading every child of a znode: pipelined, and final entries read once."""

from kazoo.exceptions import NoNodeError

from cluster.zk.znodes import FinalChildren, read_children


class Answer:
    def __init__(self, client, path):
        self.client, self.path = client, path

    def get(self):
        if self.path not in self.client.data:
            raise NoNodeError()
        return self.client.data[self.path], None


class FakeClient:
    """`get_async` answers from `data`; `vanish` children are listed but deleted
    before their read is answered."""

    def __init__(self, data, vanish=()):
        self.data, self.vanish, self.asked, self.pending = dict(data), set(vanish), [], 0

    def get_children(self, parent):
        if parent != "/p":
            raise NoNodeError()
        return sorted({path.rsplit("/", 1)[1] for path in self.data} | self.vanish, reverse=True)

    def get_async(self, path):
        self.asked.append(path)
        return Answer(self, path)


def parse(name, data, stat):
    return name, data.decode()


def path(name):
    return f"/p/{name}"


def test_every_child_is_asked_for_before_any_answer_and_returned_in_name_order():
    client = FakeClient({"/p/b": b"2", "/p/a": b"1"}, vanish={"c"})
    assert read_children(client, "/p", path, parse) == {"a": ("a", "1"), "b": ("b", "2")}
    assert client.asked == ["/p/a", "/p/b", "/p/c"]


def test_a_missing_parent_reads_as_empty():
    assert read_children(FakeClient({}), "/q", path, parse) == {}


def test_final_entries_are_read_once_and_forgotten_when_deleted():
    client = FakeClient({"/p/a": b"done", "/p/b": b"open"})
    children = FinalChildren(client, "/p", path, parse, lambda entry: entry[1] == "done")
    assert children.read() == {"a": ("a", "done"), "b": ("b", "open")}
    client.asked.clear()
    client.data["/p/b"] = b"done"
    assert children.read() == {"a": ("a", "done"), "b": ("b", "done")}
    assert client.asked == ["/p/b"]  # a was final: not asked again
    client.asked.clear()
    del client.data["/p/a"]
    assert children.read() == {"b": ("b", "done")}
    assert client.asked == []
    client.data["/p/a"] = b"open"  # a new child of that name is read afresh
    assert children.read() == {"a": ("a", "open"), "b": ("b", "done")}
    assert client.asked == ["/p/a"]
