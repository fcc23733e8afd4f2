"""Whose fault a failed Spark batch is: the batch's (it goes to `failure`) or Spark's
(the session rolls back and the processor tries again later).

The batch's fault, the same on every rerun: a record that does not parse, SQL that
does not compile or names an unknown column, a Python function that raises, content
that is not the format it claims.

Spark's fault: its master is down, its context stopped, a job ran past its time limit
and was cancelled (`is_spark_unavailable`): the processor backs off and retries for as
long as it takes, and the batch stays queued. Anything else (an executor lost, a job
aborted for a reason not listed) may pass too, but only `max_attempts` times for one
batch: then the batch goes to `failure`, so that a batch that always fails in a way
not listed here cannot stall the queue.
"""

from __future__ import annotations

import re

# Spark error classes (and Java exceptions in a failed job's message) that the input
# causes: rerunning it fails the same way.
_INPUT_MARKERS = (
    "MALFORMED_RECORD",
    "Malformed records",
    "FAILED_READ_FILE",
    "CANNOT_READ_FILE_FOOTER",
    "is not a Parquet file",
    "PARSE_SYNTAX_ERROR",
    "CANNOT_PARSE",
    "CAST_INVALID_INPUT",
    "NumberFormatException",
    "DIVIDE_BY_ZERO",
    "ARITHMETIC_OVERFLOW",
    "PythonException",
    "UNRESOLVED_COLUMN",
    "DATATYPE_MISMATCH",
    "INCOMPATIBLE_COLUMN_TYPE",
)
_JAVA_CLASS = re.compile(r"^(?:[a-z][\w$]*\.)+[\w$]*(?:Exception|Error): ")
# Spark itself is not there (its master is down, its context stopped, a job was
# cancelled at its time limit): never the batch's fault, never counted against it.
_UNAVAILABLE_MARKERS = (
    "stopped SparkContext",
    "SparkContext was shut down",
    "SparkContext has been shutdown",
    "cancelled",
    "Connection refused",
    "All masters are unresponsive",
    "Master removed our application",
    "Py4JNetworkError",
    "Answer from Java side is empty",
    "Error while sending or receiving",
)
ERROR_ATTRIBUTE = "spark.error"
MAX_MESSAGE = 1000


class BatchInputError(Exception):
    """A failure the batch causes; the message is what goes into `spark.error`."""


def is_input_error(error: BaseException) -> bool:
    if isinstance(error, BatchInputError):
        return True
    try:
        from pyspark.errors import AnalysisException, IllegalArgumentException, PythonException
    except ImportError:
        return False
    if isinstance(error, (AnalysisException, IllegalArgumentException, PythonException)):
        return True
    text = str(error)
    return any(marker in text for marker in _INPUT_MARKERS)


def is_spark_unavailable(error: BaseException) -> bool:
    if isinstance(error, ConnectionError):
        return True
    text = f"{type(error).__name__}: {error}"
    return any(marker in text for marker in _UNAVAILABLE_MARKERS)


def describe(error: BaseException) -> str:
    """One readable line (at most `MAX_MESSAGE` characters) of `error`, for `spark.error`
    and the log: Spark's own message without py4j's preamble, the Java class name or
    the stack."""
    for line in str(error).splitlines():
        line = _JAVA_CLASS.sub("", line.strip().removeprefix(": "))
        if line and not line.startswith(("An error occurred while calling", "at ")):
            return line[:MAX_MESSAGE]
    return type(error).__name__
