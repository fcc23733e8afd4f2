from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult


class RaiseOnBadInput(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "1.0"
        description = "Raises ValueError for content that is not a number; passes numbers on."

    def __init__(self, **kwargs):
        pass

    def transform(self, context, flowfile):
        number = int(flowfile.getContentsAsBytes().decode("utf-8"))  # raises for what is not a number
        self.logger.info("took {}", number)
        return FlowFileTransformResult(relationship="success", attributes={"number": str(number)})
