from custody_tiny_shout import shout
from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult


class ShoutGreeting(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "2.1"
        description = "Shouts the content with a package it depends on."
        dependencies = ["custody_tiny_shout==1.0"]

    def __init__(self, **kwargs):
        pass

    def transform(self, context, flowfile):
        return FlowFileTransformResult(relationship="success", contents=shout(flowfile.getContentsAsBytes().decode()))
