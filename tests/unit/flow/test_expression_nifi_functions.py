"""The functions of NiFi's expression language that flows imported from NiFi use most:
dates (format, toDate) with DateTimeFormatter's patterns, Java's replacement syntax,
and the text and encoding functions. Expected dates are what Java 25's
DateTimeFormatter wrote for the same instant, pattern and zone (Locale.US)."""

from __future__ import annotations

from datetime import datetime

import pytest

from flow.errors import ExpressionError
from flow.expression import compile_expression
from flow.expression_dates import format_millis, parse_millis
from flow.flowfile import FlowFile

INSTANT = 1733083925123  # 2024-12-01T20:12:05.123Z

JAVA = [
    ("America/New_York", "yyyy-MM-dd HH:mm:ss.SSS", "2024-12-01 15:12:05.123"),
    ("America/New_York", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-12-01T15:12:05.123-05:00"),
    ("America/New_York", "EEE MMM dd HH:mm:ss z yyyy", "Sun Dec 01 15:12:05 EST 2024"),
    ("America/New_York", "yy/M/d h:mm a", "24/12/1 3:12 PM"),
    ("America/New_York", "ZZZZ Z x X xxx VV", "GMT-05:00 -0500 -05 -05 -05:00 America/New_York"),
    ("America/New_York", "EEEE MMMM d, yyyy 'at' k:mm", "Sunday December 1, 2024 at 15:12"),
    ("UTC", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-12-01T20:12:05.123Z"),
    ("UTC", "D QQQ QQQQ", "336 Q4 4th quarter"),
    ("UTC", "ZZZZ Z x X xxx VV", "GMT +0000 +00 Z +00:00 UTC"),
    ("UTC", "XX xx ZZZZZ", "Z +0000 Z"),
    ("Asia/Kolkata", "yyyy-MM-dd HH:mm:ss.SSS", "2024-12-02 01:42:05.123"),
    ("Asia/Kolkata", "EEE MMM dd HH:mm:ss z yyyy", "Mon Dec 02 01:42:05 IST 2024"),
    ("Asia/Kolkata", "ZZZZ Z x X xxx VV", "GMT+05:30 +0530 +0530 +0530 +05:30 Asia/Kolkata"),
]


def evaluate(text: str, **attributes: str) -> str:
    return compile_expression(text).evaluate(FlowFile.new(INSTANT, attributes))


@pytest.mark.parametrize(("zone", "pattern", "written"), JAVA)
def test_format_writes_what_javas_date_time_formatter_writes(zone, pattern, written):
    assert format_millis(INSTANT, pattern, zone) == written


@pytest.mark.parametrize(("zone", "pattern", "written"), [row for row in JAVA if "yy" in row[1] and "E" not in row[1]])
def test_to_date_reads_back_what_format_wrote(zone, pattern, written):
    millis = parse_millis(written, pattern, zone)
    precision = 1 if "SSS" in pattern else 1000 if "ss" in pattern else 60_000
    assert millis == INSTANT // precision * precision


def test_dates_chain_as_nifi_flows_write_them():
    assert evaluate("${d:toDate('yyyyMMdd', 'UTC'):format('yyyy/MM/dd', 'UTC')}", d="20241201") == "2024/12/01"
    # a date as the result is Java's Date.toString(), in the machine's zone
    local = datetime.fromtimestamp(1733011200).astimezone().strftime("%a %b %d %H:%M:%S %Z %Y")
    assert evaluate("${d:toDate('yyyyMMdd', 'UTC')}", d="20241201") == local
    assert evaluate("${d:toDate('yyyyMMdd', 'UTC'):toNumber()}", d="20241201") == "1733011200000"
    assert evaluate("${d:toDate('yyyyMMdd', 'UTC'):minus(86400000):format('yyyy-MM-dd', 'UTC')}", d="20241201") == (
        "2024-11-30"
    )
    assert evaluate("${t:format('HH:mm', 'GMT+05:30')}", t=str(INSTANT)) == "01:42"
    stamp = "2024-12-01T15:12:05.123-05:00"
    assert evaluate("${t:toDate(\"yyyy-MM-dd'T'HH:mm:ss.SSSXXX\"):toNumber()}", t=stamp) == str(INSTANT)
    assert len(evaluate("${now():format('yyyy-MM-dd')}")) == 10


def test_a_bad_date_pattern_or_zone_is_refused_when_the_expression_is_read():
    for text, reason in [
        ("${now():format('yyyy-bb')}", "letter 'b'"),
        ("${now():format('yyyy', 'Mars/Olympus')}", "unknown time zone"),
        ('${now():format("\'unterminated")}', "unterminated"),
        ("${now():format('yyyy[MM')}", "without"),
    ]:
        with pytest.raises(ExpressionError, match=reason):
            compile_expression(text)


def test_text_that_is_not_the_date_fails_the_flowfile_with_the_reason():
    with pytest.raises(ExpressionError, match="does not match the date pattern"):
        evaluate("${d:toDate('yyyy-MM-dd')}", d="01/12/2024")
    with pytest.raises(ExpressionError, match="is not a date"):
        evaluate("${d:toDate('yyyy-MM-dd')}", d="2024-02-30")


def test_replace_all_takes_javas_group_references_and_keeps_pythons():
    assert evaluate("${f:replaceAll('(.*)[.]txt', '$1.csv')}", f="a.txt") == "a.csv"
    # in quotes ${...} is an expression, as in NiFi: $${ keeps a named group's reference
    assert evaluate("${f:replaceAll('(?P<stem>.*)[.]txt', '$${stem}.csv')}", f="b.txt") == "b.csv"
    assert evaluate("${f:replaceAll('(?P<stem>.*)[.]txt', '${stem}.csv')}", f="b.txt", stem="c") == "c.csv"
    assert evaluate("${f:replaceAll('(a)', '\\$$1')}", f="a.txt") == "$a.txt"  # \$ is a literal dollar
    assert evaluate("${f:replaceAll('(a)(b)', '$21')}", f="ab") == "b1"  # no group 21: group 2, then 1
    assert evaluate("${f:replaceAll('([a-z]+)@([a-z]+)', '\\2 at \\1')}", f="me@host") == "host at me"
    # in quotes a backslash stays before what is not an escape, as NiFi keeps it: \. is a dot
    assert evaluate("${f:replaceAll('\\.txt$', '')}", f="a.txt.txt") == "a.txt"
    assert evaluate("${f:replaceFirst('[a-z]', 'X')}", f="abc") == "Xbc"


@pytest.mark.parametrize(
    ("text", "attributes", "result"),
    [
        ("${x:replaceNull('none')}", {}, "none"),
        ("${x:replaceEmpty('none')}", {"x": "  "}, "none"),
        ("${x:indexOf('.')}:${x:lastIndexOf('.')}", {"x": "a.b.c"}, "1:3"),
        ("${x:substringBeforeLast('.')}|${x:substringAfterLast('.')}", {"x": "a.b.c"}, "a.b|c"),
        ("${x:in('red', 'green')}", {"x": "green"}, "true"),
        ("${x:in('red')}", {"x": "blue"}, "false"),
        ("${x:isJson()}|${y:isJson()}", {"x": '{"a": 1}', "y": "{a"}, "true|false"),
        ("${x:jsonPath('$.a.b[1]')}", {"x": '{"a": {"b": [1, {"c": 2}]}}'}, '{"c":2}'),
        ("${x:jsonPath('$.missing')}", {"x": "{}"}, ""),
        ("${x:urlEncode()}", {"x": "a b&c=d~*"}, "a+b%26c%3Dd%7E*"),
        ("${x:urlDecode()}", {"x": "a+b%26c"}, "a b&c"),
        ("${x:base64Encode()}|${x:base64Encode():base64Decode()}", {"x": "héllo"}, "aMOpbGxv|héllo"),
        ("${x:escapeJson()}", {"x": 'say "hi"/\n\u00e9'}, 'say \\"hi\\"\\/\\n\\u00e9'),
        ("${x:escapeJson():unescapeJson()}", {"x": 'say "hi"/\n'}, 'say "hi"/\n'),
        ("${x:escapeXml()}", {"x": "<a href='x'>&</a>"}, "&lt;a href=&apos;x&apos;&gt;&amp;&lt;/a&gt;"),
        ("${x:escapeCsv()}|${y:escapeCsv()}", {"x": 'a,"b"', "y": "plain"}, '"a,""b"""|plain'),
        ("${x:hash('MD5')}", {"x": "abc"}, "900150983cd24fb0d6963f7d28e17f72"),
        ("${x:hash('SHA-256'):substring(0, 16)}", {"x": "abc"}, "ba7816bf8f01cfea"),
        ("${x:toRadix(16)}|${x:toRadix(2, 16)}", {"x": "255"}, "ff|0000000011111111"),
        ("${x:fromRadix(16)}", {"x": "ff"}, "255"),
        ("${x:getDelimitedField(2)}", {"x": 'a,"b,c",d'}, '"b,c"'),
        ("${x:getDelimitedField(2, ',', '\"', '\\\\', true)}", {"x": 'a, "b,c" ,d'}, "b,c"),
        ("${x:getDelimitedField(9)}", {"x": "a,b"}, ""),
        ("${x:repeat(3)}", {"x": "ab"}, "ababab"),
        ("${random():ge(0)}", {}, "true"),
    ],
)
def test_text_and_encoding_functions(text, attributes, result):
    assert evaluate(text, **attributes) == result


def test_bad_input_fails_with_the_function_and_the_reason():
    for text, attributes, reason in [
        ("${x:base64Decode()}", {"x": "not base64!"}, "base64Decode"),
        ("${x:hash('CRC99')}", {"x": "a"}, "unknown hash algorithm"),
        ("${x:fromRadix(2)}", {"x": "102"}, "not a number in base 2"),
        ("${x:jsonPath('$.a')}", {"x": "{oops"}, "not JSON"),
        ("${x:repeat(2000000)}", {"x": "ab"}, "limit"),
    ]:
        with pytest.raises(ExpressionError, match=reason):
            evaluate(text, **attributes)


def test_the_documentation_names_every_function():
    from pathlib import Path

    from flow.expression import FUNCTIONS, SUBJECTS

    page = (Path(__file__).resolve().parents[3] / "docs" / "concepts" / "expression-language.md").read_text()
    assert [name for name in [*FUNCTIONS, *SUBJECTS] if f"`{name}" not in page] == []
