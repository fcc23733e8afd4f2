"""The flow engine: FlowFiles, queues, sessions, processors and engines."""
