"""Documentation helpers of NiFi 2's Python API: the `use_case` and
`multi_processor_use_case` decorators (which change nothing of what they decorate) and
the classes they are described with."""

from __future__ import annotations


class ProcessorConfiguration:
    def __init__(self, processor_type: str, configuration: str):
        self.processor_type = processor_type
        self.configuration = configuration


def use_case(description: str, configuration: str | None = None, notes: str | None = None, keywords=None):
    def decorator(target):
        return target

    return decorator


def multi_processor_use_case(description: str, configurations, notes: str | None = None, keywords=None):
    def decorator(target):
        return target

    return decorator


class UseCaseDetails:
    def __init__(self, description: str, notes: str, keywords, configuration: str):
        self.description = description
        self.notes = notes
        self.keywords = keywords
        self.configuration = configuration


class MultiProcessorUseCaseDetails:
    def __init__(self, description: str, notes: str, keywords, configurations):
        self.description = description
        self.notes = notes
        self.keywords = keywords
        self.configurations = configurations


class PropertyDependency:
    def __init__(self, name: str, display_name: str, dependent_values):
        self.name = name
        self.display_name = display_name
        self.dependent_values = dependent_values


class PropertyDescription:
    def __init__(
        self,
        name: str,
        description: str,
        display_name=None,
        required=False,
        sensitive=True,
        default_value=None,
        expression_language_scope=None,
        controller_service_definition=None,
        allowable_values=None,
        dependencies=None,
    ):
        self.name = name
        self.description = description
        self.display_name = display_name
        self.required = required
        self.sensitive = sensitive
        self.default_value = default_value
        self.expression_language_scope = expression_language_scope
        self.controller_service_definition = controller_service_definition
        self.allowable_values = allowable_values or []
        self.dependencies = dependencies or []
