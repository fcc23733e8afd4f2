"""The logger NiFi's framework gives a processor as `self.logger`: `trace`, `debug`,
`info`, `warn` and `error`, each `(msg, *args)` with `{}` placeholders, as NiFi's
component log formats them. Custody's writes to a `logging.Logger` of the node."""

from __future__ import annotations

import logging as _logging
from enum import Enum


class LogLevel(Enum):
    TRACE = 1
    DEBUG = 2
    INFO = 3
    WARN = 4
    ERROR = 5


def _format(message, args) -> str:
    text = str(message)
    for arg in args:
        if "{}" not in text:
            break
        text = text.replace("{}", str(arg), 1)
    return text


class Logger:
    """NiFi's component logger over `target` (a standard library logger)."""

    def __init__(self, target: _logging.Logger):
        self._target = target

    def trace(self, msg, *args) -> None:
        if self._target.isEnabledFor(_logging.DEBUG - 5):
            self._target.log(_logging.DEBUG - 5, "%s", _format(msg, args))

    def debug(self, msg, *args) -> None:
        if self._target.isEnabledFor(_logging.DEBUG):
            self._target.debug("%s", _format(msg, args))

    def info(self, msg, *args) -> None:
        self._target.info("%s", _format(msg, args))

    def warn(self, msg, *args) -> None:
        self._target.warning("%s", _format(msg, args))

    warning = warn

    def error(self, msg, *args) -> None:
        self._target.error("%s", _format(msg, args))
