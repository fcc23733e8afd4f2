from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult


class NeedsAbsentPackage(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "1.0"
        dependencies = ["custody-package-that-is-nowhere==9.9"]

    def transform(self, context, flowfile):
        return FlowFileTransformResult(relationship="success")
