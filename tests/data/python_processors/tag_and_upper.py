from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult
from nifiapi.properties import ExpressionLanguageScope, PropertyDescriptor, StandardValidators


class TagAndUpper(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "1.0.0"
        description = "Upper-cases the content and adds a greeting attribute made from the FlowFile."
        tags = ["text", "attributes"]

    GREETING = PropertyDescriptor(
        name="Greeting",
        description="The greeting attribute value; may reference attributes",
        required=True,
        default_value="hello ${filename}",
        expression_language_scope=ExpressionLanguageScope.FLOWFILE_ATTRIBUTES,
        validators=[StandardValidators.NON_EMPTY_VALIDATOR],
    )
    UPPER = PropertyDescriptor(
        name="Upper Case",
        description="Whether to upper-case the content",
        default_value="true",
        allowable_values=["true", "false"],
    )
    REPEAT = PropertyDescriptor(
        name="Repeat",
        description="How many times the content is written out",
        default_value="1",
        validators=[StandardValidators.POSITIVE_INTEGER_VALIDATOR],
    )

    def __init__(self, **kwargs):
        pass

    def getPropertyDescriptors(self):
        return [self.GREETING, self.UPPER, self.REPEAT]

    def transform(self, context, flowfile):
        greeting = context.getProperty(self.GREETING).evaluateAttributeExpressions(flowfile).getValue()
        contents = flowfile.getContentsAsBytes()
        if context.getProperty(self.UPPER).asBoolean():
            contents = contents.upper()
        contents = contents * context.getProperty("Repeat").asInteger()
        attributes = {"greeting": greeting, "original.size": str(flowfile.getSize())}
        return FlowFileTransformResult(relationship="success", attributes=attributes, contents=contents)
