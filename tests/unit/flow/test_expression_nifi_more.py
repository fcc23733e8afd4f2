"""NiFi's expression functions over several attributes, math(), the HTML and name-based
UUID encodings, evaluateELString(), dates as results and quoted text with expressions.
Expected values are those NiFi's expression language guide gives for its examples,
unless a comment says otherwise."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from flow.errors import ExpressionError
from flow.expression import compile_expression
from flow.flowfile import FlowFile

GUIDE = {
    "abc": "hello world",
    "xyz": "good bye world",
    "filename": "file.txt",
    "number_list": "1,2,3,4,5",
    "word_list": "those,known,or,not",
}


def evaluate(text: str, **attributes: str) -> str:
    return compile_expression(text).evaluate(FlowFile.new(0, attributes))


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ('${anyAttribute("abc", "xyz"):contains("bye")}', "true"),
        ('${anyAttribute("filename","xyz"):toUpper():contains("e")}', "false"),
        ('${allAttributes("abc", "xyz"):contains("world")}', "true"),
        ('${allAttributes("abc", "filename","xyz"):toUpper():contains("e")}', "false"),
        ("${anyMatchingAttribute(\"[ax].*\"):contains('bye')}", "true"),
        ('${anyMatchingAttribute(".*"):isNull()}', "false"),
        ('${allMatchingAttributes("[ax].*"):contains("world")}', "true"),
        ('${allMatchingAttributes(".*"):isNull()}', "false"),
        ('${allMatchingAttributes("f.*"):count()}', "1"),
        ('${anyDelineatedValue("${number_list}", ","):contains("5")}', "true"),
        ('${anyDelineatedValue("this that and", ","):equals("${word_list}")}', "false"),
        ('${allDelineatedValues("${word_list}", ","):contains("o")}', "true"),
        ('${allDelineatedValues("${number_list}", ","):count()}', "5"),
        ('${allDelineatedValues("${number_list}", ","):matches("[0-9]+")}', "true"),
        ('${allDelineatedValues("${word_list}", ","):matches(\'e\')}', "false"),
        ('${allMatchingAttributes("[ax].*"):substringBefore(" "):join("-")}', "hello-good"),
        ('${allAttributes("abc", "xyz"):join(" now ")}', "hello world now good bye world"),
        ('${allMatchingAttributes("[ax].*"):substringBefore(" "):count()}', "2"),
        # the guide says 1 here; both values contain "world", and count() counts true values
        ('${allAttributes("abc", "xyz"):contains("world"):count()}', "2"),
        ('${allAttributes("abc", "non-existent-attr", "xyz"):count()}', "2"),
        ('${allMatchingAttributes("[ax].*"):length():gt(10):count()}', "2"),
        # nothing selected: the chain runs on a missing value, as NiFi 2.3.0 ran it
        ('${anyMatchingAttribute("nothing.*"):isEmpty()}', "true"),
        ('${allMatchingAttributes("nothing.*"):isEmpty()}', "true"),
        ('${allMatchingAttributes("nothing.*"):contains("x")}', "false"),
        ('${allMatchingAttributes("nothing.*"):join(",")}', ""),
        ('${allMatchingAttributes("nothing.*"):count()}', "0"),
    ],
)
def test_several_attributes_as_the_guide_evaluates_them(text, result):
    assert evaluate(text, **GUIDE) == result


@pytest.mark.parametrize(
    ("value", "delimiter", "pieces"),
    [
        ("a,b,,c,,", ",", "a|b||c"),  # trailing empty pieces are dropped, as by String.split
        (",a", ",", "|a"),  # a leading one stays
        ("abc", "", "a|b|c"),  # a zero-width delimiter splits between characters
        ("a1b22c", "[0-9]+", "a|b|c"),  # the delimiter is a pattern
        ("plain", ";", "plain"),
    ],
)
def test_delineated_values_split_as_javas_string_split(value, delimiter, pieces):
    assert evaluate(f"${{allDelineatedValues('${{v}}', '{delimiter}'):join('|')}}", v=value) == pieces


def test_matching_attributes_see_the_uuid_and_match_whole_names():
    flowfile = FlowFile.new(0, {"kafka.topic": "t", "kafka.key": "k", "xkafka.partition": "1"})
    assert compile_expression("${allMatchingAttributes('kafka[.].*'):join(',')}").evaluate(flowfile) == "t,k"
    assert compile_expression("${anyMatchingAttribute('uu.d'):equals(${uuid})}").evaluate(flowfile) == "true"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("${abc:join(',')}", "follows allAttributes"),
        ("${anyAttribute('abc'):count()}", "follows allAttributes"),
        ("${allAttributes('abc'):count():join(',')}", "end an expression"),
        ("${allAttributes('abc'):join(','):toUpper()}", "end an expression"),
        ("${allAttributes()}", "takes 1 to"),
        ("${anyDelineatedValue('a')}", "takes 2 argument"),
    ],
)
def test_a_misplaced_aggregate_or_a_missing_argument_stops_the_load(text, reason):
    with pytest.raises(ExpressionError, match=reason):
        compile_expression(text)


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ("${literal(2):toDecimal():math('pow', 2.5)}", "5.656854249492381"),
        ("${literal(64):toDecimal():math('cbrt'):toNumber():math('max', 5)}", "5"),
        ("${literal(5.4):math('scalb', 2)}", "21.6"),
        ("${first:toDecimal():math('pow', ${second:toDecimal()})}", "6.25"),
        ("${literal(-5):math('abs')}", "5"),
        ("${literal(-2.5):math('round')}", "-2"),  # Math.round: half up
        ("${literal(2.5):math('rint')}", "2.0"),  # Math.rint: half to even
        ("${literal(-7):math('floorMod', 3)}", "2"),
        ("${literal(-7):math('floorDiv', 2)}", "-4"),
        ("${literal(7):math('ceilDiv', 2)}", "4"),
        ("${literal(16):math('sqrt')}", "4.0"),  # NiFi wants toDecimal() first; Custody runs sqrt(double)
        ("${math('random'):ge(0):and(${math('random'):lt(1)})}", "true"),
    ],
)
def test_math_runs_javas_math_methods(text, result):
    assert evaluate(text, first="2.5", second="2") == result


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("${literal(5):math('exit')}", "no method 'exit'"),
        ("${literal(5):math('pow')}", "takes a second argument"),
        ("${literal(-1.0):math('sqrt')}", "no real result"),
        ("${literal(1000.0):math('exp')}", "overflows"),
        ("${literal(9223372036854775807):math('incrementExact')}", "overflows"),
        ("${literal(1):math('floorMod', 0)}", "divided by zero"),
    ],
)
def test_math_refuses_with_the_reason(text, reason):
    with pytest.raises(ExpressionError, match=reason):
        evaluate(text)


@pytest.mark.parametrize(
    ("text", "value", "result"),
    [
        ("${m:escapeHtml3()}", '"bread" & "butter"', "&quot;bread&quot; &amp; &quot;butter&quot;"),
        ("${m:escapeHtml4()}", '"bread" & "butter"', "&quot;bread&quot; &amp; &quot;butter&quot;"),
        ("${m:unescapeHtml3()}", "&quot;bread&quot; &amp; &quot;butter&quot;", '"bread" & "butter"'),
        ("${m:unescapeHtml4()}", "&quot;bread&quot; &amp; &quot;butter&quot;", '"bread" & "butter"'),
        # HTML 4 names Greek letters and the euro; HTML 3.2 only Latin-1
        ("${m:escapeHtml4()}", "café € α <b>", "caf&eacute; &euro; &alpha; &lt;b&gt;"),
        ("${m:escapeHtml3()}", "café € α", "caf&eacute; € α"),
        ("${m:unescapeHtml4()}", "&euro;&#233;&#xE9;&apos;&nope;", "€éé&apos;&nope;"),
        ("${m:unescapeHtml3()}", "&euro;&eacute;", "&euro;é"),
        ("${m:escapeHtml4()}", "it's", "it's"),
        ("${m:UUID3('b9e81de3-7047-4b5e-a822-8fff5b49f808')}", "string value", "bf0ea246-a177-3300-bd7e-d4c9e973dc6f"),
        ("${m:UUID5('245b55a8-397d-4480-a41e-16603c8cf9ad')}", "string value", "4d111477-5100-5f2d-ae79-b38bbe15aa78"),
    ],
)
def test_html_entities_and_name_based_uuids(text, value, result):
    assert evaluate(text, m=value) == result


def test_a_name_based_uuid_needs_a_uuid_namespace():
    with pytest.raises(ExpressionError, match="not a UUID"):
        evaluate("${m:UUID5('not-a-uuid')}", m="x")


def test_evaluate_el_string_evaluates_the_value_against_the_same_flowfile():
    query = "SELECT * FROM TABLE WHERE ID = ${id}"
    assert evaluate("${query:evaluateELString()}", query=query, id="20") == "SELECT * FROM TABLE WHERE ID = 20"
    assert evaluate("${v:evaluateELString()}", v="no expression, $$ kept") == "no expression, $$ kept"
    assert evaluate("${v:evaluateELString()}", v="$${literal}") == "${literal}"


def test_a_value_that_evaluates_itself_ends_with_an_error_not_a_hang():
    started = time.monotonic()
    with pytest.raises(ExpressionError, match="nests more than|steps"):
        evaluate("${v:evaluateELString()}", v="${v:evaluateELString()}")
    # two copies a level: without the budget, 2**32 evaluations
    with pytest.raises(ExpressionError, match="nests more than|steps"):
        evaluate("${v:evaluateELString()}", v="${v:evaluateELString()}${v:evaluateELString()}")
    assert time.monotonic() - started < 10
    with pytest.raises(ExpressionError, match="expected"):
        evaluate("${v:evaluateELString()}", v="${unterminated")


def test_a_date_as_the_result_is_javas_date_to_string():
    before = time.time()
    written = evaluate("${now()}")
    after = time.time()
    read = datetime.strptime(written, "%a %b %d %H:%M:%S %Z %Y").replace(tzinfo=datetime.now().astimezone().tzinfo)
    assert int(before) - 1 <= read.timestamp() <= after + 1
    millis = int(evaluate("${now():toNumber()}"))
    assert before * 1000 - 1000 <= millis <= time.time() * 1000 + 1000
    # arithmetic on a date is a number, as toNumber() is
    assert evaluate("${d:toDate('yyyyMMdd', 'UTC'):plus(1)}", d="20241201") == "1733011200001"
    assert evaluate("${d:toDate('yyyyMMdd', 'UTC'):toDecimal():gt(0)}", d="20241201") == "true"


def test_quoted_text_with_an_expression_is_evaluated_as_nifi_does():
    assert evaluate("${f:equals('${base}.csv')}", f="a.csv", base="a") == "true"
    assert evaluate("${f:append('-${n:plus(1)}')}", f="x", n="1") == "x-2"
    assert evaluate("${f:append('$${n}')}", f="x", n="1") == "x${n}"
    # a "${" whose braces never close is text, as in NiFi; one that closes must compile
    assert evaluate("${f:append('${n')}", f="x", n="1") == "x${n"
    with pytest.raises(ExpressionError, match="unknown function 'bogus'"):
        compile_expression("${f:append('${n:bogus()}')}")


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ("${abc}", "xyz"),
        ("$${abc}", "${abc}"),
        ("$$${abc}", "$xyz"),
        ("$$$${abc}", "$${abc}"),
        ("$$$$${abc}", "$$xyz"),
        ("I owe you $5", "I owe you $5"),
        ("You owe me $$5 too", "You owe me $$5 too"),
        ("Unescaped $$${'5'} because no closing brace", "Unescaped $ because no closing brace"),
    ],
)
def test_dollars_escape_only_before_a_brace_as_the_guide_tabulates(text, result):
    assert evaluate(text, abc="xyz") == result


def test_the_nifi_import_lists_none_of_these_functions_as_missing():
    from flow.nifi_flow.expression_check import missing_functions

    text = (
        "${anyAttribute('a', 'b'):isEmpty()}${allMatchingAttributes('x.*'):join(',')}"
        "${allDelineatedValues('${l}', ','):count()}${x:math('abs')}${x:UUID5('${ns}')}"
        "${x:escapeHtml4():unescapeHtml3()}${x:evaluateELString()}${x:toDecimal()}"
    )
    assert missing_functions(text) == []
    assert missing_functions("${getStateValue('n')}${t:toInstant('y', 'UTC'):toNanos()}") == [
        "getStateValue",
        "toNanos",
    ]


DOCUMENT = (
    '{"firstName":"John","lastName":"Smith","age":25,"voter":true,"height":6.1,'
    '"address":{"city":"New York"},"phoneNumbers":[{"type":"home"},{"type":"office"}],"nicknames":[]}'
)


@pytest.mark.parametrize(
    ("text", "changed"),
    [
        ("${j:jsonPathDelete('$.firstName')}", lambda d: d.pop("firstName")),
        ("${j:jsonPathDelete('$.missing-path')}", lambda d: None),
        ("${j:jsonPathAdd('$.nicknames', 'Jimmy')}", lambda d: d["nicknames"].append("Jimmy")),
        ("${j:jsonPathAdd('$.missingpath', 'Jimmy')}", lambda d: None),
        ("${j:jsonPathSet('$.firstName', 'James')}", lambda d: d.update(firstName="James")),
        ("${j:jsonPathSet('$.age', ${n:toNumber()})}", lambda d: d.update(age=5)),
        ("${j:jsonPathSet('$.missingpath', 'James')}", lambda d: None),
        ("${j:jsonPathPut('$', 'middlename', 'Turon')}", lambda d: d.update(middlename="Turon")),
        # a number written as the value is JSON text, one an expression gives a number (as in NiFi 2.3.0)
        ("${j:jsonPathPut('$.address', 'zip', 10021)}", lambda d: d["address"].update(zip="10021")),
        ("${j:jsonPathDelete('$.phoneNumbers[?(@.type == \"home\")]')}", lambda d: d["phoneNumbers"].pop(0)),
        ("${j:jsonPathSet('$.phoneNumbers[*].type', 'x')}", lambda d: [p.update(type="x") for p in d["phoneNumbers"]]),
        ("${j:jsonPathDelete('$.phoneNumbers[0,1]')}", lambda d: d["phoneNumbers"].clear()),
    ],
)
def test_json_path_changes_the_document_where_the_path_points(text, changed):
    expected = json.loads(DOCUMENT)
    changed(expected)
    written = evaluate(text, j=DOCUMENT, n="5")
    assert json.loads(written) == expected
    assert written == json.dumps(expected, separators=(",", ":"))  # compact, members in order


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("${j:jsonPathAdd('$.firstName', 'Jimmy')}", "only an array can be added to"),
        ("${j:jsonPathPut('$.age', 'k', 'v')}", "a member can be put in an object only"),
        ("${j:jsonPathDelete('$..type')}", "deep scan"),
        ("${j:jsonPathDelete('$')}", "whole document"),
        ("${x:jsonPathDelete('$.a')}", "not JSON"),
    ],
)
def test_json_path_changes_it_cannot_make_fail_saying_why(text, reason):
    with pytest.raises(ExpressionError, match=reason):
        evaluate(text, j=DOCUMENT, x="{not json")


@pytest.mark.parametrize(
    ("text", "uri"),
    [
        (
            "${getUri('https', 'admin:admin', 'nifi.apache.org', '1234', '/path/data ', "
            "'key=value &key2=value2', 'frag1')}",
            "https://admin:admin@nifi.apache.org:1234/path/data%20?key=value%20&key2=value2#frag1",
        ),
        (
            "${getUri('https', null, 'nifi.apache.org', 8443, '/docs.html', null, null)}",
            "https://nifi.apache.org:8443/docs.html",
        ),
        (
            "${getUri('http', null, 'nifi.apache.org', -1, '/docs.html', null, null)}",
            "http://nifi.apache.org/docs.html",
        ),
        # a percent is always quoted, non-ASCII letters are kept, an IPv6 host is bracketed
        ("${getUri('http', null, '::1', -1, '/a b/é%', 'q=ü v', null)}", "http://[::1]/a%20b/é%25?q=ü%20v"),
    ],
)
def test_get_uri_builds_as_javas_uri_constructor(text, uri):
    assert evaluate(text) == uri


def test_get_uri_refuses_a_scheme_or_a_port_that_is_not_one():
    with pytest.raises(ExpressionError, match="not a URI scheme"):
        evaluate("${getUri('1http', null, 'h', -1, null, null, null)}")
    with pytest.raises(ExpressionError, match="not -1"):
        evaluate("${getUri('http', null, 'h', 70000, null, null, null)}")
