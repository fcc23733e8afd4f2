"""InvokeHTTP: sends each FlowFile's content by HTTP POST, PUT or PATCH, or calls a URL
for each FlowFile by GET, DELETE, HEAD or OPTIONS (no body), as NiFi's InvokeHTTP (its
processor, property and relationship names, in Custody's lower-case spelling). A GET's
answer is usually wanted: `response_generation` `success` makes its body a FlowFile on
`response` (the import of a NiFi flow sets it, as NiFi always makes one).

The request: `http_method` to `url` (an expression, evaluated for each FlowFile; its
scheme must be written out, `http://` or `https://`, and anything else is refused when
the flow is loaded), the FlowFile's content as the body, `Content-Type` from
`content_type` (`${mime.type}` by default; application/octet-stream when that is
empty). With `send_as_flowfile_v3` the body is the FlowFile packaged as NiFi's FlowFile
Stream v3 (`flow.flowfile_v3`, `Content-Type: application/flowfile-v3`): its attributes
travel with its content, as NiFi's PostHTTP "Send as FlowFile" sent them, and a
ListenHTTP (Custody's or NiFi's) makes the same FlowFile again. Headers: each dynamic
property (its name, its evaluated value), the attributes whose names fully match
`request_header_attributes_pattern` (NiFi's "Attributes to Send"), `Authorization:
Bearer <auth_token>` when set, and the idempotency key (below). A header that cannot
be sent (a name that is not an HTTP token, a value with a control character or outside
Latin-1) sends the FlowFile to `failure` saying which; unicode attributes travel in
`send_as_flowfile_v3`.

Where each FlowFile goes, by the answer (NiFi's routing, with 408, 429 and a keyed 409
retried):

  original   2xx: delivered; a SEND provenance event.
  response   with `response_generation` `success`, the body of a 2xx answer as a new
             FlowFile (a child of the request, its attributes and the status), and with
             `always`, of every answer; the relationship exists only then.
  retry      5xx, 408 (request timeout), 429 (too many requests), and 409 when the
             request carried an idempotency key (the receiver is still working on the
             same key: Custody's ListenHTTP answers so); penalized. NiFi sends 408 and
             429 to No Retry; both say "try again later", so they are retried here.
  no_retry   any other status (1xx, 3xx: redirects are not followed, 4xx).
  failure    nothing was answered: the connection was refused or cut, a timeout, TLS;
             or the request could not be built (an expression failed, a URL or header
             that cannot be sent, content that cannot be read); penalized.

Every answered FlowFile gets `invokehttp.status.code`, `invokehttp.status.message`,
`invokehttp.request.url` and `invokehttp.request.duration` (ms); a non-2xx one also the
start of the answer's body in `invokehttp.response.body` (256 bytes at most, as NiFi);
a failed one `invokehttp.exception.class` and `invokehttp.exception.message`.

Exactly once into a ListenHTTP. A FlowFile leaves for `original` only in the commit
after its 2xx; a node that dies between the answer and that commit sends the FlowFile
again when it comes back. Each request therefore carries the header
`idempotency_key_header` (`Idempotency-Key`) with a key derived from the FlowFile's
identity, `idempotency_key` (`${uuid}` by default: the same FlowFile keeps its uuid
through a crash, a clone or a child gets a new one): Custody's ListenHTTP answers a
key it has committed 200 without a second FlowFile. For that the resent request must
be the same bytes: the attributes this processor writes itself (`invokehttp.*`) are
never packaged nor sent as headers, and a package lists attributes in the order of
their names. An empty `idempotency_key_header` sends none (at least once).

Timeouts, per socket operation (`flow.processors.http_exchange`): `connection_timeout`
(connect and TLS handshake), `socket_write_timeout`, `socket_read_timeout`. A task
holds no lock of the processor or the engine while it waits on the network: other
processors, and this one's other concurrent tasks, run meanwhile; only the task's own
thread and the FlowFiles of its session wait, at most those timeouts (a stop of the
processor, too, waits for the send in flight). `batch_size`
FlowFiles are sent one after another in a task and committed together (1 by default,
as NiFi's); a crash resends the batch's sent ones, each answered by its key.

TLS: an `https://` URL is verified against the system's certificates, or those in
`tls_ca_cert` (a PEM file: a ListenHTTP's self-signed certificate), TLS 1.2 at least.
"""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from .. import flowfile_v3
from ..errors import ExpressionError, FlowError, UnreadableContent
from ..expression import Expression
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures
from .expression_failures import ExpressionFailures
from .http_exchange import BODILESS, Answer, Timeouts, TransportError, exchange
from .merge import packaged_attributes

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession

ORIGINAL, RESPONSE, RETRY, NO_RETRY, FAILURE = "original", "response", "retry", "no_retry", "failure"
NONE, SUCCESS, ALWAYS = "none", "success", "always"
OCTET_STREAM = "application/octet-stream"
OWN_PREFIX = "invokehttp."  # the attributes this processor writes: never sent
RESPONSE_BODY_ATTRIBUTE_SIZE = 256  # NiFi's "Response Body Attribute Size"
SCHEMES = ("http", "https")
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110's token: a header's name
BEARER = re.compile(r"[A-Za-z0-9._~+/-]+=*")  # RFC 6750's b64token
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Headers the processor sets itself; a dynamic property or an attribute cannot.
_OWN_HEADERS = frozenset({"content-length", "content-type", "host", "transfer-encoding", "authorization"})
STREAM_CHUNK = 1 << 20


class RequestRefused(Exception):
    """The request for a FlowFile cannot be built: `kind` and `message`, as a transport
    error's, for the FlowFile's `invokehttp.exception.*`."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


def route_of(status: int, keyed: bool) -> str:
    """The relationship of a request FlowFile answered `status` (`keyed`: the request
    carried an idempotency key)."""
    if 200 <= status < 300:
        return ORIGINAL
    if status >= 500 or status in (408, 429) or (status == 409 and keyed):
        return RETRY
    return NO_RETRY


def response_wanted(generation: str, status: int) -> bool:
    """Whether an answer's body becomes a FlowFile on `response`."""
    return generation == ALWAYS or (generation == SUCCESS and 200 <= status < 300)


def url_problem(text: str) -> str | None:
    """What is wrong with an evaluated URL, None when it can be requested."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        return f"{text[:200]!r} is not a URL ({error})"
    if parts.scheme.lower() not in SCHEMES:
        return f"{text[:200]!r} is not an http:// or https:// URL"
    if not parts.hostname:
        return f"{text[:200]!r} names no host"
    if port == 0:
        return f"{text[:200]!r} names port 0"
    if parts.username is not None or parts.password is not None:
        return f"{text[:200]!r} holds credentials; give a token in auth_token instead"
    if _CONTROL.search(text) or " " in text:
        return f"{text[:200]!r} holds a space or a control character"
    return None


def header_problem(name: str, value: str) -> str | None:
    """Why a header cannot be sent as it is, None when it can."""
    if not TOKEN.fullmatch(name):
        return f"header name {name[:100]!r} is not an HTTP token"
    if name.lower() in _OWN_HEADERS:
        return f"header {name!r} is set by the processor itself"
    if _CONTROL.search(value):
        return f"the value of header {name!r} holds a control character"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return f"the value of header {name!r} is not Latin-1 (send unicode attributes with send_as_flowfile_v3)"
    return None


def sent_attributes(flowfile: FlowFile) -> dict[str, str]:
    """The attributes a FlowFile Stream v3 carries for `flowfile`: all of them (its uuid
    too) but this processor's own, in the order of their names."""
    return {name: value for name, value in packaged_attributes(flowfile).items() if not name.startswith(OWN_PREFIX)}


class InvokeHTTP(Processor):
    type_name = "InvokeHTTP"
    description = (
        "Sends each FlowFile by HTTP POST, PUT or PATCH to url (or calls url by GET, DELETE, HEAD or OPTIONS), "
        "as NiFi's InvokeHTTP: the content as the body, or "
        "the FlowFile with its attributes as NiFi's FlowFile Stream v3 (send_as_flowfile_v3). 2xx to original, "
        "5xx, 408 and 429 to retry, other codes to no_retry, no answer to failure; the response body on "
        "response when asked. Each request carries an Idempotency-Key from the FlowFile's uuid, so that a "
        "resend after a crash is not taken twice by a Custody ListenHTTP."
    )
    dynamic_properties = True
    relationships = (ORIGINAL, RETRY, NO_RETRY, FAILURE)
    relationships_note = "and `response` when response_generation is success or always"
    properties = (
        PropertyDescriptor(
            "http_method",
            "choice",
            default="POST",
            choices=("POST", "PUT", "PATCH", "GET", "DELETE", "HEAD", "OPTIONS"),
            description="POST, PUT and PATCH send the FlowFile's content; the others send no body",
        ),
        PropertyDescriptor(
            "url",
            "expression",
            required=True,
            description="where to send; must start with http:// or https:// (the rest may use attributes)",
        ),
        PropertyDescriptor(
            "content_type",
            "expression",
            default="${mime.type}",
            description="the Content-Type; application/octet-stream when empty (application/flowfile-v3 with "
            "send_as_flowfile_v3)",
        ),
        PropertyDescriptor(
            "send_as_flowfile_v3",
            "boolean",
            default=False,
            description="send the FlowFile's attributes with its content, packaged as NiFi's FlowFile Stream v3",
        ),
        PropertyDescriptor("connection_timeout", "duration", default="5 sec", description="to connect (and TLS)"),
        PropertyDescriptor(
            "socket_read_timeout", "duration", default="15 sec", description="the longest wait for the answer's bytes"
        ),
        PropertyDescriptor(
            "socket_write_timeout", "duration", default="15 sec", description="the longest wait to send request bytes"
        ),
        PropertyDescriptor(
            "auth_token", "string", default="", description="when set, Authorization: Bearer <this> (a secret)"
        ),
        PropertyDescriptor(
            "request_header_attributes_pattern",
            "regex",
            description="attributes whose names fully match are sent as headers (NiFi's Attributes to Send)",
        ),
        PropertyDescriptor(
            "idempotency_key",
            "expression",
            default="${uuid}",
            description="the key of the request, the same for each resend of a FlowFile",
        ),
        PropertyDescriptor(
            "idempotency_key_header",
            "string",
            default="Idempotency-Key",
            description="the header that carries idempotency_key (empty: none, delivery at least once)",
        ),
        PropertyDescriptor(
            "response_generation",
            "choice",
            default=NONE,
            choices=(NONE, SUCCESS, ALWAYS),
            description="none; success: a 2xx answer's body becomes a FlowFile on response; always: every answer's",
        ),
        PropertyDescriptor(
            "max_response_size",
            "size",
            default="10 MB",
            description="the largest response body made a FlowFile; a longer one sends the request to failure",
        ),
        PropertyDescriptor(
            "batch_size", "integer", default=1, minimum=1, description="FlowFiles sent in one task, committed together"
        ),
        PropertyDescriptor(
            "tls_ca_cert", "string", default="", description="PEM file of the CAs to trust for https (default: system)"
        ),
    )

    @classmethod
    def relationships_for(cls, properties, dynamic):
        if properties.get("response_generation", NONE) != NONE:
            return (ORIGINAL, RESPONSE, RETRY, NO_RETRY, FAILURE)
        return cls.relationships

    @classmethod
    def validate(cls, properties, dynamic):
        url: Expression = properties["url"]
        if url.is_literal:
            problem = url_problem(url.text)
            if problem is not None:
                return [("url", problem)]
        elif not url.text.lower().startswith(("http://", "https://")):
            return [
                (
                    "url",
                    f"must start with http:// or https:// written out (the scheme may not come from attributes), "
                    f"got {url.text[:200]!r}",
                )
            ]
        if properties["send_as_flowfile_v3"] and properties["http_method"] in BODILESS:
            return [("send_as_flowfile_v3", f"a {properties['http_method']} request has no body to package")]
        for name in ("connection_timeout", "socket_read_timeout", "socket_write_timeout"):
            if properties[name] <= 0:
                return [(name, "must be more than 0 seconds")]
        token = properties["auth_token"]
        if token and not BEARER.fullmatch(token):
            return [("auth_token", "must be letters, digits and -._~+/ (then any '='), as a Bearer token is")]
        key_header = properties["idempotency_key_header"].strip()
        if key_header and not TOKEN.fullmatch(key_header):
            return [("idempotency_key_header", f"{key_header!r} is not an HTTP header name")]
        for name in dynamic:
            if not TOKEN.fullmatch(name) or name.lower() in _OWN_HEADERS:
                return [
                    (
                        name,
                        "a dynamic property is a request header: its name must be an HTTP token, not one "
                        "the processor sets itself (Content-Type, Content-Length, Host, Authorization)",
                    )
                ]
        return []

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._tls: ssl.SSLContext | None = None

    def on_scheduled(self, context: ProcessContext) -> None:
        self._tls = _client_tls(self.id, context["tls_ca_cert"])

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        expressions = ExpressionFailures(self.id, context, session, to_failure=True)
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in session.get_batch(context["batch_size"]):
            try:
                self._send(context, session, flowfile)
            except _ExpressionFailed as failed:
                expressions.set_aside(flowfile, failed.prop, failed.error)
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
        expressions.log()
        unreadable.log()

    def _send(self, context: ProcessContext, session: ProcessSession, flowfile: FlowFile) -> None:
        started = time.monotonic()
        url_text = _evaluate(context["url"], flowfile, "url")
        try:
            url = _checked_url(url_text)
            headers = self._headers(context, flowfile)
            keyed = any(name.lower() == context["idempotency_key_header"].strip().lower() for name in headers)
            body: Iterator[bytes] = iter(())
            length = 0
            if context["http_method"] not in BODILESS:
                body, length = self._body(context, session, flowfile, headers)
            generation = context["response_generation"]
            answer = exchange(
                context["http_method"],
                url,
                headers,
                body,
                length,
                Timeouts(
                    context["connection_timeout"], context["socket_write_timeout"], context["socket_read_timeout"]
                ),
                tls=self._tls,
                read_body=max(context["max_response_size"], RESPONSE_BODY_ATTRIBUTE_SIZE)
                if generation != NONE
                else RESPONSE_BODY_ATTRIBUTE_SIZE,
            )
        except (RequestRefused, TransportError) as error:
            self._failed(context, session, flowfile, url_text, error.kind, error.message)
            return
        self._answered(context, session, flowfile, url_text, answer, keyed, started)

    def _headers(self, context: ProcessContext, flowfile: FlowFile) -> dict[str, str]:
        headers: dict[str, str] = {}
        pattern = context.get("request_header_attributes_pattern")
        if pattern is not None:
            for name, value in flowfile.attributes.items():
                if not name.startswith(OWN_PREFIX) and pattern.fullmatch(name):
                    headers[name] = value
        for name, expression in context.dynamic.items():
            headers[name] = _evaluate(expression, flowfile, name)
        for name, value in headers.items():
            problem = header_problem(name, value)
            if problem is not None:
                raise RequestRefused("InvalidHeader", problem)
        if context["auth_token"]:
            headers["Authorization"] = f"Bearer {context['auth_token']}"
        key_header = context["idempotency_key_header"].strip()
        if key_header:
            key = _evaluate(context["idempotency_key"], flowfile, "idempotency_key")
            problem = header_problem(key_header, key) if key else "the idempotency key is empty"
            if problem is not None:
                raise RequestRefused("InvalidHeader", problem)
            headers[key_header] = key
        return headers

    @staticmethod
    def _body(
        context: ProcessContext, session: ProcessSession, flowfile: FlowFile, headers: dict[str, str]
    ) -> tuple[Iterator[bytes], int]:
        """The request's body and its length; sets `Content-Type` in `headers`."""
        if context["send_as_flowfile_v3"]:
            headers["Content-Type"] = flowfile_v3.MIME_TYPE
            head = flowfile_v3.header(sent_attributes(flowfile), flowfile.size)
        else:
            content_type = _evaluate(context["content_type"], flowfile, "content_type").strip() or OCTET_STREAM
            problem = header_problem("Content-Type-Value", content_type)
            if problem is not None:
                raise RequestRefused("InvalidHeader", problem.replace("Content-Type-Value", "Content-Type"))
            headers["Content-Type"] = content_type
            head = b""
        return _chunks(session, flowfile, head), len(head) + flowfile.size

    def _answered(
        self,
        context: ProcessContext,
        session: ProcessSession,
        flowfile: FlowFile,
        url: str,
        answer: Answer,
        keyed: bool,
        started: float,
    ) -> None:
        status = answer.status
        attributes = {
            "invokehttp.status.code": str(status),
            "invokehttp.status.message": answer.reason,
            "invokehttp.request.url": url,
            "invokehttp.request.duration": str(int((time.monotonic() - started) * 1000)),
        }
        relationship = route_of(status, keyed)
        if relationship != ORIGINAL:
            attributes["invokehttp.response.body"] = answer.body[:RESPONSE_BODY_ATTRIBUTE_SIZE].decode(
                "utf-8", "replace"
            )
        generation = context["response_generation"]
        if response_wanted(generation, status):
            if answer.body_cut or len(answer.body) > context["max_response_size"]:
                self._failed(
                    context,
                    session,
                    flowfile,
                    url,
                    "ResponseTooLarge",
                    f"the answer's body ({status}) is over max_response_size ({context['max_response_size']} bytes)",
                )
                return
            response = session.create(
                flowfile, attributes={**attributes, "mime.type": answer.content_type or OCTET_STREAM}
            )
            session.transfer(session.write_bytes(response, answer.body), RESPONSE)
        flowfile = session.put_all_attributes(flowfile, attributes)
        if relationship == ORIGINAL and context["http_method"] not in BODILESS:
            session.send(flowfile, url)  # its content went there
        elif relationship == RETRY:
            flowfile = session.penalize(flowfile)
        session.transfer(flowfile, relationship)

    def _failed(
        self, context: ProcessContext, session: ProcessSession, flowfile: FlowFile, url: str, kind: str, message: str
    ) -> None:
        context.limited_log.warning(
            f"{self.id}:failure", "%s: %s to %s goes to failure: %s: %s", self.id, flowfile.id, url[:200], kind, message
        )
        flowfile = session.put_all_attributes(
            flowfile,
            {
                "invokehttp.request.url": url,
                "invokehttp.exception.class": kind,
                "invokehttp.exception.message": message[:1000],
            },
        )
        session.transfer(session.penalize(flowfile), FAILURE)


class _ExpressionFailed(Exception):
    def __init__(self, prop: str, error: ExpressionError):
        super().__init__(str(error))
        self.prop, self.error = prop, error


def _evaluate(expression: Expression, flowfile: FlowFile, prop: str) -> str:
    try:
        return expression.evaluate(flowfile)
    except ExpressionError as error:
        raise _ExpressionFailed(prop, error) from None


def _checked_url(text: str) -> SplitResult:
    problem = url_problem(text)
    if problem is not None:
        raise RequestRefused("InvalidURL", problem)
    parts = urlsplit(text)
    return parts._replace(scheme=parts.scheme.lower())


def _chunks(session: ProcessSession, flowfile: FlowFile, head: bytes) -> Iterator[bytes]:
    """`head`, then the FlowFile's content, read as it is sent."""
    if head:
        yield head
    if not flowfile.size:
        return
    with session.read(flowfile) as source:
        while chunk := source.read(STREAM_CHUNK):
            yield chunk


def _client_tls(processor_id: str, ca_file: str) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as error:
        raise FlowError(
            f"{processor_id}: cannot load tls_ca_cert {ca_file!r}: {error}; give a PEM file of the certificates to "
            "trust"
        ) from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context
