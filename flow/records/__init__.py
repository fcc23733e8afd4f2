"""Records: a FlowFile that carries many records, read and written by the flow's reader
and writer services (`flow.controller_service`), and Arrow record batches between them.

- `readers`, `writers`: the service bases and the schema a reader is given;
- `json_format`, `csv_format`, `parquet_format`: the formats, one module each;
- `avro_schema`: Avro schemas (JSON) to Arrow schemas and back;
- `rewrite`: one FlowFile's records read and written again (ConvertRecord's work);
- `catalog`: the service types a flow can name;
- `errors`: `RecordError` (the FlowFile goes to failure, with where and why).
"""
