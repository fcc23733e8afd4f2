"""NiFi's parameter contexts to Custody's one set of flow parameters.

A NiFi group reads the parameters of the context it is bound to (`parameterContextName`)
and of the contexts that context inherits, its own first. Custody's flow has one set,
referenced the same way (#{name}), so the contexts of every group are merged: a name
that two of them give different values is a problem, as is a reference to a parameter
the group's context lacks. A sensitive parameter's value is never written (NiFi's
download leaves it out anyway): it is listed, to be given at run time
(`custody run --param name=value`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .document import NiFiDocument, NiFiGroup, NiFiParameter
from .problems import Problem
from .values import PARAMETER_REFERENCE

_CUSTODY_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass
class FlowParameters:
    values: dict[str, str] = field(default_factory=dict)  # written to the Custody flow
    unset: dict[str, str] = field(default_factory=dict)  # name -> why: sensitive, or no value
    by_group: dict[str, dict[str, NiFiParameter]] = field(default_factory=dict)  # group id -> what it sees

    def visible(self, group: NiFiGroup) -> dict[str, NiFiParameter]:
        return self.by_group.get(group.identifier, {})


def resolve_parameters(document: NiFiDocument, problems: list[Problem]) -> FlowParameters:
    result = FlowParameters()
    seen: dict[str, NiFiParameter] = {}
    for group in document.groups:
        if group.parameter_context is None:
            continue
        if group.parameter_context not in document.parameter_contexts:
            problems.append(
                Problem(
                    f"{group.path}.parameterContextName",
                    f"names parameter context {group.parameter_context!r}, which the document does not hold",
                )
            )
            continue
        visible = _context_parameters(document, group.parameter_context, problems, ())
        result.by_group[group.identifier] = visible
        for name, parameter in visible.items():
            earlier = seen.get(name)
            if earlier is not None and (earlier.value, earlier.sensitive) != (parameter.value, parameter.sensitive):
                problems.append(
                    Problem(
                        parameter.path,
                        f"parameter {name!r} differs from the one at {earlier.path}: a Custody flow has one set of "
                        "parameters, rename one of them",
                    )
                )
                continue
            seen[name] = parameter
    for name, parameter in seen.items():
        if not _CUSTODY_NAME.fullmatch(name):
            problems.append(
                Problem(parameter.path, f"Custody's parameter names are letters, digits, '_', '.' and '-': {name!r}")
            )
        elif parameter.sensitive:
            result.unset[name] = "sensitive"
        elif parameter.value is None:
            result.unset[name] = "no value"
        else:
            result.values[name] = parameter.value
    return result


def _context_parameters(
    document: NiFiDocument, name: str, problems: list[Problem], chain: tuple[str, ...]
) -> dict[str, NiFiParameter]:
    """The parameters context `name` gives, its own before those it inherits."""
    context = document.parameter_contexts[name]
    found = {parameter.name: parameter for parameter in context.parameters}
    for inherited in context.inherited:
        if inherited in chain or inherited == name:
            problems.append(Problem(f"{context.path}.inheritedParameterContexts", f"inherits {inherited!r} in a cycle"))
            continue
        if inherited not in document.parameter_contexts:
            problems.append(
                Problem(
                    f"{context.path}.inheritedParameterContexts",
                    f"inherits parameter context {inherited!r}, which the document does not hold",
                )
            )
            continue
        for parameter_name, parameter in _context_parameters(document, inherited, problems, chain + (name,)).items():
            found.setdefault(parameter_name, parameter)
    return found


def referenced(value: str) -> list[str]:
    """The names of the parameters `value` references (#{name})."""
    return PARAMETER_REFERENCE.findall(value)


def substitute(value: str, visible: dict[str, NiFiParameter]) -> str:
    """`value` with each parameter it references replaced by its value; a sensitive or
    unknown one raises ValueError (its value is not in the document)."""

    def replace(match: re.Match) -> str:
        parameter = visible.get(match.group(1))
        if parameter is None or parameter.sensitive or parameter.value is None:
            raise ValueError(
                f"this value is looked up at import, so parameter #{{{match.group(1)}}} needs a value in the document"
            )
        return parameter.value

    return PARAMETER_REFERENCE.sub(replace, value)
