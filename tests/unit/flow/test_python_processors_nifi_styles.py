"""NiFi Python processors written the ways NiFi's own examples and newer releases write
them, loaded unmodified: the older constructor `__init__(self, jvm)` (NiFi makes each
processor with `jvm=`), a helper module imported by name from the processor's
directory, dynamic properties read through `context.getProperties()` and their
descriptors' `dynamic` flag, and the newer API's `FlowFileTransformMultipleOutput`
(any number of results per FlowFile) and `MultipleFlowFileSource` (any number of new
FlowFiles per run), with their result classes in modules of their own."""

from __future__ import annotations

import pytest

from flow.loading import parse_flow
from flow.python_extensions import PythonExtensions, extension_registry
from flow.stateless import StatelessFlow
from tests.unit.flow.test_python_processors import one_processor, run, write

WORD_RULES = """
def shout(word):
    return word.upper()
"""

SPLIT_WORDS = """
import word_rules
from nifiapi.flowfiletransformmultipleoutput import FlowFileTransformMultipleOutput
from nifiapi.flowfiletransformresult import FlowFileTransformResult


class SplitWords(FlowFileTransformMultipleOutput):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransformMultipleOutput"]

    class ProcessorDetails:
        version = "1.0.0"
        description = "One FlowFile per word, shouted."

    def __init__(self, jvm):
        self.jvm = jvm

    def transform(self, context, flowFile):
        text = flowFile.getContentsAsBytes().decode()
        if text == "raise":
            raise ValueError("asked to")
        if text == "half":
            return [FlowFileTransformResult("success", contents="kept?"), "not a result"]
        results = []
        for index, word in enumerate(text.split()):
            attributes = {"word.index": str(index)}
            results.append(FlowFileTransformResult("success", attributes=attributes, contents=word_rules.shout(word)))
        return results
"""

EMIT_PAGES = """
from nifiapi.multipleflowfilesource import MultipleFlowFileSource
from nifiapi.flowfilesourceresult import FlowFileSourceResult
from nifiapi.properties import PropertyDescriptor, StandardValidators


class EmitPages(MultipleFlowFileSource):
    class Java:
        implements = ["org.apache.nifi.python.processor.MultipleFlowFileSource"]

    class ProcessorDetails:
        version = "1.0.0"

    PAGES = PropertyDescriptor(
        name="Pages", description="pages per run", default_value="3",
        validators=[StandardValidators.NON_NEGATIVE_INTEGER_VALIDATOR],
    )

    def __init__(self, **kwargs):
        super().__init__()

    def getPropertyDescriptors(self):
        return [self.PAGES]

    def create(self, context):
        pages = context.getProperty(self.PAGES).asInteger()
        return (FlowFileSourceResult("success", {"page.index": str(i)}, f"page-{i}") for i in range(pages))
"""

SET_FIELDS = """
from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult
from nifiapi.properties import ExpressionLanguageScope, PropertyDescriptor


class SetFields(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "1.0.0"

    def __init__(self, **kwargs):
        super().__init__()

    def getDynamicPropertyDescriptor(self, name):
        return PropertyDescriptor(
            name=name, description="a field", expression_language_scope=ExpressionLanguageScope.FLOWFILE_ATTRIBUTES
        )

    def transform(self, context, flowFile):
        fields = {
            key.name: context.getProperty(key.name).evaluateAttributeExpressions(flowFile).getValue()
            for key in context.getProperties().keys()
            if key.dynamic
        }
        return FlowFileTransformResult("success", attributes=fields)
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nifi-styles")
    write(directory, "word_rules.py", WORD_RULES)
    write(directory, "split_words.py", SPLIT_WORDS)
    write(directory, "emit_pages.py", EMIT_PAGES)
    write(directory, "set_fields.py", SET_FIELDS)
    return extension_registry(PythonExtensions((str(directory),), cache_directory=str(directory)))


def test_a_multiple_output_transform_makes_a_flowfile_per_result_and_keeps_the_original(registry):
    out = run(
        registry,
        one_processor("SplitWords", {}, ["success", "failure", "original"]),
        [({"filename": "a"}, b"alpha beta gamma"), ({"filename": "b"}, b"")],
    )
    assert [(a["word.index"], a["filename"], data) for a, data in out["success"]] == [
        ("0", "a", b"ALPHA"),
        ("1", "a", b"BETA"),
        ("2", "a", b"GAMMA"),
    ]
    assert sorted(data for _, data in out["original"]) == [b"", b"alpha beta gamma"]
    assert "failure" not in out


def test_a_multiple_output_transform_that_fails_keeps_none_of_its_results(registry):
    out = run(
        registry,
        one_processor("SplitWords", {}, ["success", "failure", "original"]),
        [({"filename": "r"}, b"raise"), ({"filename": "h"}, b"half")],
    )
    assert "success" not in out and "original" not in out
    errors = {a["filename"]: a["python.error"] for a, _ in out["failure"]}
    assert errors["r"] == "ValueError: asked to"
    assert "not a result with a relationship" in errors["h"]


def test_a_multiple_flowfile_source_makes_each_result_a_flowfile(registry):
    definition = {
        "processors": [{"id": "p", "type": "EmitPages", "properties": {"Pages": 4}}],
        "ports": [{"id": "out", "type": "output"}],
        "connections": [{"source": "p", "destination": "out"}],
    }
    flow = StatelessFlow(parse_flow(definition, registry=registry))
    try:
        result = flow.trigger([])
        assert result.success, result.failure
        result.acknowledge()
        made = [(attributes["page.index"], data) for _, attributes, data in result.outputs]
    finally:
        flow.close()
    assert made == [("0", b"page-0"), ("1", b"page-1"), ("2", b"page-2"), ("3", b"page-3")]


def test_dynamic_properties_are_marked_dynamic_as_nifi_marks_them(registry):
    out = run(
        registry,
        one_processor(
            "SetFields",
            {"colour": "red", "name": "${filename:toUpper()}"},
            ["success"],
            auto_terminate=["failure", "original"],
        ),
        [({"filename": "x"}, b"")],
    )
    ((attributes, _),) = out["success"]
    assert (attributes["colour"], attributes["name"]) == ("red", "X")
