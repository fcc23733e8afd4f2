from nifiapi.properties import PropertyDescriptor, StandardValidators
from nifiapi.recordtransform import RecordTransform, RecordTransformResult
from nifiapi.relationship import Relationship


class PartitionByCity(RecordTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.RecordTransform"]

    class ProcessorDetails:
        version = "0.2.0"
        description = "Partitions records by a field; records whose amount is negative go to invalid."
        tags = ["records", "partition"]

    def __init__(self, **kwargs):
        super().__init__()
        self.field = PropertyDescriptor(
            name="Partition Field",
            description="The field whose value partitions the records",
            default_value="city",
            validators=[StandardValidators.NON_EMPTY_VALIDATOR],
        )

    def getPropertyDescriptors(self):
        return [self.field]

    def getRelationships(self):
        return [
            Relationship(name="success", description="Partitioned records"),
            Relationship(name="invalid", description="Records with a negative amount"),
        ]

    def transform(self, context, record, schema, attributemap):
        field = context.getProperty(self.field).getValue()
        if record.get("amount", 0) < 0:
            return RecordTransformResult(record=record, relationship="invalid")
        record["source"] = attributemap.getAttribute("filename")
        return RecordTransformResult(record=record, partition={field: record[field]})
