"""flow.json_path: the Jayway syntax over the "store" document of Jayway's README, with
the results Jayway gives (each checked against Jayway 2.9.0 with the Jackson provider,
NiFi's); definite and indefinite paths; filters; the refusals and their positions;
the guards against costly paths and patterns."""

from __future__ import annotations

import json

import pytest

from flow.json_path import (
    JsonPathError,
    JsonPathEvaluationError,
    PathNotFound,
    ResultTooLong,
    compile_path,
    json_text,
)

STORE = {
    "store": {
        "book": [
            {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
            {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
            {
                "category": "fiction",
                "author": "Herman Melville",
                "title": "Moby Dick",
                "isbn": "0-553-21311-3",
                "price": 8.99,
            },
            {
                "category": "fiction",
                "author": "J. R. R. Tolkien",
                "title": "The Lord of the Rings",
                "isbn": "0-395-19395-8",
                "price": 22.99,
            },
        ],
        "bicycle": {"color": "red", "price": 19.95},
    },
    "expensive": 10,
}
BOOKS = STORE["store"]["book"]
AUTHORS = [book["author"] for book in BOOKS]
TITLES = [book["title"] for book in BOOKS]


def evaluate(path: str, document=STORE):
    return compile_path(path).evaluate(document)


# -- the examples of Jayway's README ---------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$.store.book[*].author", AUTHORS),
        ("$..author", AUTHORS),
        ("$.store.*", [BOOKS, STORE["store"]["bicycle"]]),
        ("$.store..price", [8.95, 12.99, 8.99, 22.99, 19.95]),
        ("$..book[2]", [BOOKS[2]]),
        ("$..book[-2]", [BOOKS[2]]),
        ("$..book[0,1]", BOOKS[:2]),
        ("$..book[:2]", BOOKS[:2]),
        ("$..book[1:2]", BOOKS[1:2]),
        ("$..book[-2:]", BOOKS[2:]),
        ("$..book[2:]", BOOKS[2:]),
        ("$..book[?(@.isbn)]", BOOKS[2:]),
        ("$.store.book[?(@.price < 10)]", [BOOKS[0], BOOKS[2]]),
        ("$..book[?(@.price <= $['expensive'])]", [BOOKS[0], BOOKS[2]]),
        ("$..book[?(@.author =~ /.*REES/i)]", [BOOKS[0]]),
    ],
)
def test_the_readme_examples(path, expected):
    assert evaluate(path) == expected


def test_a_deep_wildcard_lists_every_member_in_document_order():
    everything = evaluate("$..*")
    assert everything[:2] == [STORE["store"], 10]
    assert everything[2:4] == [BOOKS, STORE["store"]["bicycle"]]
    assert everything[4:8] == BOOKS
    assert everything[8:12] == ["reference", "Nigel Rees", "Sayings of the Century", 8.95]
    assert everything[-2:] == ["red", 19.95]
    assert len(everything) == 2 + 2 + 4 + 18 + 2  # under $, store, book; the books' and bicycle's members


# -- definite and indefinite ----------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$", STORE),
        ("$.expensive", 10),
        ("$.store.book[0].author", "Nigel Rees"),
        ("$['store']['book'][0]['title']", "Sayings of the Century"),
        ('$["store"].book[-1].isbn', "0-395-19395-8"),
        ("$.store.book[0]['author','title']", {"author": "Nigel Rees", "title": "Sayings of the Century"}),
        ("$.store['missing','bicycle']", {"bicycle": STORE["store"]["bicycle"]}),
        ("store.bicycle.color", "red"),  # read as $.store..., as Jayway does
        ("['expensive']", 10),
    ],
)
def test_a_definite_path_gives_one_value(path, expected):
    compiled = compile_path(path)
    assert compiled.definite
    assert compiled.evaluate(STORE) == expected


@pytest.mark.parametrize(
    "path",
    [
        "$.store.book[9]",
        "$.store.book[-9]",
        "$.store.book[0].missing",
        "$.store.missing.x",
        "$.expensive.x",
        "$.expensive[0]",
        "$[0]",
        "$.store.book[0].title.foo",
        "$.expensive['a','b']",
    ],
)
def test_a_definite_path_that_matches_nothing_is_not_found(path):
    with pytest.raises(PathNotFound):
        evaluate(path)


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$.store.book[*].missing", []),
        ("$..nothing", []),
        ("$.store.book[?(@.price > 100)]", []),
        ("$.store.book[*].isbn", ["0-553-21311-3", "0-395-19395-8"]),
        (
            "$.store.book[*]['author','isbn']",
            [{"author": a} for a in AUTHORS[:2]] + [{"author": b["author"], "isbn": b["isbn"]} for b in BOOKS[2:]],
        ),
        ("$..['price','author']", [{"price": b["price"], "author": b["author"]} for b in BOOKS]),
        ("$.store['book','bicycle'].price", [19.95]),
        ("$.store.book[0,0,1].author", AUTHORS[:1] * 2 + AUTHORS[1:2]),
        ("$.store.book[1,9].author", AUTHORS[1:2]),
        ("$.store.book.*.price", [8.95, 12.99, 8.99, 22.99]),
        ("$.store.book[0][*]", ["reference", "Nigel Rees", "Sayings of the Century", 8.95]),
        ("$.store.book[::2].title", TITLES[::2]),
        ("$.store.book[::-1].title", TITLES[::-1]),
        ("$.store.book[-10:2].title", TITLES[:2]),
        ("$.store.book[?(@.price < 10)][0]", []),
        ("$[?(@.expensive == 10)].expensive", [10]),
        ("$.store.bicycle[?(@.color == 'red')]", [STORE["store"]["bicycle"]]),
        ("$..[?(@.price < 10)]", [BOOKS[0], BOOKS[2]]),
    ],
)
def test_an_indefinite_path_gives_a_list(path, expected):
    compiled = compile_path(path)
    assert not compiled.definite
    assert compiled.evaluate(STORE) == expected


def test_a_deep_scan_of_indexes_visits_arrays_in_document_order():
    document = {"a": {"x": 1, "y": [1, 2]}, "arr": [[1, 2], [3, 4]], "tags": ["a", "b"]}
    assert evaluate("$..[1]", document) == [2, [3, 4], 2, 4, "b"]
    assert evaluate("$.a..*", document) == [1, [1, 2], 1, 2]
    assert evaluate("$..x", document) == [1]


def test_documents_that_are_not_objects():
    assert evaluate("$[0]", [1, [2, 3], {"a": 4}]) == 1
    assert evaluate("$[-1].a", [1, [2, 3], {"a": 4}]) == 4
    assert evaluate("$[?(@ > 0)]", [1, [2, 3], {"a": 4}]) == [1]
    assert evaluate("$", "just text") == "just text"
    with pytest.raises(PathNotFound):
        evaluate("$.a", "just text")


def test_quoted_names_take_escapes():
    document = {"it's": 1, 'q"uote': 2, "sp ace": 3, "dot.key": 4, "c": 5, "a\\b": 6}
    assert evaluate("$['it\\'s']", document) == 1
    assert evaluate('$["q\\"uote"]', document) == 2
    assert evaluate("$['sp ace']", document) == 3
    assert evaluate("$['dot.key']", document) == 4
    assert evaluate("$['\\u0063']", document) == 5
    assert evaluate("$['a\\\\b']", document) == 6
    assert evaluate("$[ 'c' ]", document) == 5


# -- filters ---------------------------------------------------------------------------

FLAGS = {
    "flags": [True, False, None, 1, "1", 2.5],
    "tags": ["a", "b"],
    "objs": [{"t": ["x"]}, {"t": ["y"]}, {"t": "x"}],
}


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$.flags[?(@ == 1)]", [1, "1"]),  # a string that reads as the number is equal to it
        ("$.flags[?(@ == '1')]", [1, "1"]),
        ("$.flags[?(@ != 1)]", [True, False, None, 2.5]),
        ("$.flags[?(@ == true)]", [True]),
        ("$.flags[?(@ == null)]", [None]),
        ("$.flags[?(@)]", [True, False, None, 1, "1", 2.5]),  # existence, whatever the value
        ("$.flags[?(@ > 1)]", [2.5]),
        ("$.tags[?(@ > 'a')]", ["b"]),
        ("$.tags[?(@ in ['a', 'z'])]", ["a"]),
        ("$.tags[?(@ nin ['a', 'z'])]", ["b"]),
        ("$.tags[?(@ =~ /A/)]", []),
        ("$.tags[?(@ =~ /A/i)]", ["a"]),
        ("$.objs[?(@.t == ['x'])]", [{"t": ["x"]}]),
        ("$.objs[?(@.t[0] == 'x')]", [{"t": ["x"]}]),
        ("$.objs[?(@.t =~ /x/)]", [{"t": ["x"]}, {"t": "x"}]),  # any string of an array
    ],
)
def test_filter_comparisons(path, expected):
    assert evaluate(path, FLAGS) == expected


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$.store.book[?(@.isbn != 'x')].title", TITLES),
        ("$.store.book[?(@.missing != 'x')].title", TITLES),  # a missing member is unequal
        ("$.store.book[?(@.isbn == null)].title", []),
        ("$.store.book[?(!@.isbn)].title", TITLES[:2]),
        ("$.store.book[?(!(@.price > 10))].title", [TITLES[0], TITLES[2]]),
        ("$.store.book[?(@.price > 10 && @.category == 'fiction')].title", [TITLES[1], TITLES[3]]),
        ("$.store.book[?(@.price > 20 || @.category == 'reference')].title", [TITLES[0], TITLES[3]]),
        ("$.store.book[?(@.category=='fiction' && @.price>10 || @.price<9)].title", TITLES),
        ("$.store.book[?(@.category=='fiction' && (@.price>10 || @.price<9))].title", TITLES[1:]),
        ("$.store.book[?(@.price == 8.95)].title", TITLES[:1]),
        ("$.store.book[?(@.price == '8.95')].title", TITLES[:1]),
        ("$.store.book[?(@.price < '10')].title", []),  # a number and a string do not order
        ("$.store.book[?(@.price > $.expensive)].title", [TITLES[1], TITLES[3]]),
        ("$.store.book[?(@.price > @.nope)].title", []),
        ("$.store.book[?(@['author'] == \"Nigel Rees\")].title", TITLES[:1]),
        ("$.store.book[?(@.title =~ /^S.*/)].title", TITLES[:2]),
        ("$.store.book[?(@.title =~ /of/)].title", []),  # a pattern matches the whole value
        ("$[?(@..color)].expensive", [10]),
        ("$..book[*][?(@.price)]", BOOKS),
    ],
)
def test_filters_over_the_store(path, expected):
    assert evaluate(path) == expected


# -- refused paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, position, reason",
    [
        ("", 0, "empty"),
        ("$.", 2, "cannot end with '.'"),
        ("$..", 3, "cannot end with '.'"),
        ("$.store. book", 8, "whitespace"),
        ("$.a b", 3, "['a name']"),
        ("$.store.book[", 12, "ends inside '['"),
        ("$['a'", 5, "expected ']'"),
        ("$['a", 4, "quoted at position 2 is not closed"),
        ("$[a]", 2, "expected a quoted name, an index"),
        ("$.store.book[0,'a']", 15, "names or indexes, not both"),
        ("$.a[1,]", 6, "expected an index"),
        ("$.a[0:1:2:3]", 9, "at most start:end:step"),
        ("$.a[::0]", 7, "step cannot be 0"),
        ("$..book.length()", 14, "functions"),
        ("$.store.book[?(@.price <)]", 24, "expected a path"),
        ("$[?(@.c = 3)]", 8, "compare with =="),
        ("$[?(@.c === 3)]", 10, "==="),
        ("$[?(true)]", 4, "a value alone is no condition"),
        ("$[?(@.tags contains 'a')]", 11, "contains is not supported"),
        ("$.tags[?(@ =~ 'a')]", 14, "pattern between slashes"),
        ("$.tags[?(@ =~ /a/q)]", 17, "unknown pattern flag"),
        ("$.tags[?(@ =~ /(a/)]", 14, "not a valid regular expression"),
        ("$.a['\\q']", 6, "unknown escape"),
        ("$.a[?(@.b == 1)", 15, "expected ']'"),
    ],
)
def test_a_path_that_cannot_be_read_is_refused_with_its_position(path, position, reason):
    with pytest.raises(JsonPathError) as refused:
        compile_path(path)
    assert refused.value.position == position, str(refused.value)
    assert reason in str(refused.value)


def test_filters_nest_only_so_deep():
    compile_path("$[?(" + "(" * 30 + "@.a" + ")" * 30 + ")]")
    with pytest.raises(JsonPathError, match="nest more than"):
        compile_path("$[?(" + "(" * 40 + "@.a" + ")" * 40 + ")]")
    with pytest.raises(JsonPathError, match="nest more than"):
        compile_path("$" + "[?(@" * 40 + ")]" * 40)


# -- guards -------------------------------------------------------------------------------


def test_an_evaluation_past_its_budget_is_given_up():
    document = [{"a": [{"b": n} for n in range(50)]} for _ in range(200)]
    path = compile_path("$..[?(@..b)]")  # a deep scan per node of a deep scan
    assert len(path.evaluate(document, budget=10_000_000)) == 1 + 200 + 200 + 200 * 50  # each {"b": n} too
    with pytest.raises(JsonPathEvaluationError, match="more than 10,000 steps"):
        path.evaluate(document, budget=10_000)


def test_a_pattern_too_costly_for_a_value_is_not_run():
    path = compile_path("$[?(@.s =~ /(a+)+b/)]")
    assert path.evaluate({"s": "aaab"}) == [{"s": "aaab"}]
    with pytest.raises(JsonPathEvaluationError, match="could take more than"):
        path.evaluate({"s": "a" * 5000})


def test_json_text_is_compact_and_bounded():
    value = {"name": "Zoë", "list": [1, 2.5, True, None, 'a"b']}
    assert json_text(value) == '{"name":"Zoë","list":[1,2.5,true,null,"a\\"b"]}'
    assert json.loads(json_text(value)) == value
    assert json_text(value, limit=100) == json_text(value)
    with pytest.raises(ResultTooLong):
        json_text(value, limit=20)
    with pytest.raises(ResultTooLong):
        json_text(["x" * 1000] * 10_000, limit=1_000_000)
    with pytest.raises(ResultTooLong):
        json_text(["\u0001" * 10], limit=30)  # escapes count too: checked on the text
