from nifiapi.componentstate import Scope, StateException
from nifiapi.flowfilesource import FlowFileSource, FlowFileSourceResult
from nifiapi.properties import PropertyDescriptor, StandardValidators


class CountingSource(FlowFileSource):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileSource"]

    class ProcessorDetails:
        version = "0.0.1-SNAPSHOT"
        description = "Creates numbered FlowFiles up to a limit, keeping its count in its state."
        tags = ["source", "state"]

    PREFIX = PropertyDescriptor(name="Prefix", description="Text before the number", default_value="item")
    LIMIT = PropertyDescriptor(
        name="Limit",
        description="How many FlowFiles to create in all",
        default_value="5",
        validators=[StandardValidators.NON_NEGATIVE_INTEGER_VALIDATOR],
    )

    def __init__(self, **kwargs):
        pass

    def getPropertyDescriptors(self):
        return [self.PREFIX, self.LIMIT]

    def onScheduled(self, context):
        try:
            context.getStateManager().getState(Scope.CLUSTER)
        except StateException as e:
            self.logger.info("State is read in create: " + str(e))

    def create(self, context):
        state = context.getStateManager().getState(Scope.CLUSTER).toMap()
        number = int(state.get("count", "0"))
        if number >= context.getProperty(self.LIMIT).asInteger():
            context.yield_resources()
            return None
        number += 1
        context.getStateManager().setState({"count": str(number)}, Scope.CLUSTER)
        prefix = context.getProperty(self.PREFIX).getValue()
        return FlowFileSourceResult(
            relationship="success", attributes={"number": str(number)}, contents=f"{prefix}-{number}"
        )
