"""UnpackContent: a FlowFile per package of a FlowFile Stream v3, as NiFi's UnpackContent.

`packaging_format`:

- `use_mime_type` (the default): the `mime.type` attribute chooses, as NiFi's "use
  mime.type attribute" does: `application/flowfile-v3` (parameters ignored) is
  unpacked. A FlowFile without `mime.type` goes to `failure`, as in NiFi; so does one
  whose type names another format. NiFi passes such a FlowFile to `success` unpacked,
  but it also unpacks tar and zip, which Custody does not: here a tar or a zip would
  pass on as if it had been unpacked, so it is refused instead, the reason in
  `unpack.error`.
- `flowfile_stream_v3`: every FlowFile is read as NiFi's FlowFile Stream v3
  (`flow.flowfile_v3`).

Each package becomes a child FlowFile (a FORK of the original): the original's
attributes (not its `filename`), then every attribute the package carried but its
sender's `uuid` (a FlowFile unpacked here is a new one, as in NiFi), `mime.type`
`application/octet-stream` when the package has none (NiFi's), and NiFi's fragment
attributes: `fragment.identifier` (the original's uuid), `fragment.index` (1, 2, ...),
`fragment.count` and `segment.original.filename` (the original's filename without a
`.pkg`, `.tar` or `.zip`). A package that carried its own `fragment.identifier` keeps
its fragment attributes, as NiFi restores them, so that MergeContent can put split
pieces together again after the trip. The children go to `success`, the original to
`original` with `fragment.identifier` and `fragment.count`.

All or nothing, per original: a damaged stream (a wrong magic, a cut, an attribute that
is not UTF-8, a length out of bounds: `FlowFileStreamError`) or an empty one sends the
original whole to `failure`, penalized, with `unpack.error` (what is wrong) and
`unpack.error.offset` (the byte of the content where it was found); the children made
so far are removed in the session and leave no trace. An original whose content cannot
be read at all goes to `failure` through `content_failures`.

Memory: a package's content is held while it is written, and small ones are gathered
up to `WRITE_TOGETHER` bytes and written side by side; a package larger than
`max_package_size` is refused as damage (the original to `failure`) before it is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, cast

from .. import flowfile_v3
from ..errors import UnreadableContent
from ..flowfile_v3 import FlowFileStreamError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession

USE_MIME_TYPE = "use_mime_type"
FLOWFILE_STREAM_V3 = "flowfile_stream_v3"
ERROR_ATTRIBUTE = "unpack.error"
OFFSET_ATTRIBUTE = "unpack.error.offset"
OCTET_STREAM = "application/octet-stream"
WRITE_TOGETHER = 16 << 20  # packages' contents gathered up to this before they are written side by side
_ARCHIVE_EXTENSIONS = (".pkg", ".tar", ".zip")


class Refused(Exception):
    """The original cannot be unpacked: `reason`, found at byte `offset` (None: not a place)."""

    def __init__(self, reason: str, offset: int | None = None):
        super().__init__(reason)
        self.reason, self.offset = reason, offset


def media_type(mime_type: str) -> str:
    """A `mime.type` without its parameters, in lower case."""
    return mime_type.split(";", 1)[0].strip().lower()


def chosen_format(packaging_format: str, mime_type: str | None) -> str:
    """The format to unpack a FlowFile with `mime_type` in; `Refused` when there is none."""
    if packaging_format != USE_MIME_TYPE:
        return packaging_format
    if mime_type is None:
        raise Refused("no mime.type attribute to choose the packaging format by")
    if media_type(mime_type) == flowfile_v3.MIME_TYPE:
        return FLOWFILE_STREAM_V3
    raise Refused(
        f"mime.type {mime_type[:200]!r} is not a packaging format this processor unpacks (only "
        f"{flowfile_v3.MIME_TYPE}); set packaging_format, or route such FlowFiles elsewhere"
    )


def child_attributes(carried: dict[str, str]) -> dict[str, str]:
    """What a package's attributes give its FlowFile: all but its sender's `uuid`, with
    `mime.type` application/octet-stream when it carried none (NiFi's)."""
    attributes = {name: value for name, value in carried.items() if name != "uuid"}
    attributes.setdefault("mime.type", OCTET_STREAM)
    return attributes


def original_filename(filename: str) -> str:
    """`segment.original.filename`: the original's filename without the extension a
    package or archive got when it was made (NiFi's rule)."""
    for extension in _ARCHIVE_EXTENSIONS:
        if filename.endswith(extension):
            return filename[: -len(extension)]
    return filename


class UnpackContent(Processor):
    type_name = "UnpackContent"
    description = (
        "Unpacks NiFi's FlowFile Stream v3 (application/flowfile-v3, as NiFi's MergeContent and InvokeHTTP "
        "send it): a FlowFile per package with the attributes it carried (not the sender's uuid) and NiFi's "
        "fragment attributes, to success; the original to original. A damaged or empty stream sends the "
        "original whole to failure, the error and its byte in unpack.error and unpack.error.offset, and "
        "nothing of it on."
    )
    properties = (
        PropertyDescriptor(
            "packaging_format",
            "choice",
            default=USE_MIME_TYPE,
            choices=(USE_MIME_TYPE, FLOWFILE_STREAM_V3),
            description="use_mime_type: application/flowfile-v3 in mime.type is unpacked, a FlowFile without "
            "mime.type or with another type goes to failure; flowfile_stream_v3: every FlowFile is read as one",
        ),
        PropertyDescriptor(
            "max_package_size",
            "size",
            default="100 MB",
            minimum=0,
            description="the largest content of one package; a larger one sends the original to failure",
        ),
    )
    relationships = ("success", "original", "failure")

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        original = session.get()
        if original is None:
            return
        try:
            chosen_format(context["packaging_format"], original.attributes.get("mime.type"))
            children = self._unpack(context, session, original)
        except Refused as refusal:
            self._refuse(context, session, original, refusal)
            return
        except UnreadableContent as error:
            unreadable = ContentFailures(self.id, context, session)
            unreadable.set_aside(original, error)
            unreadable.log()
            return
        session.transfer(session.put_all_attributes(original, self._fragment_of(original, children)), "original")

    def _unpack(self, context: ProcessContext, session: ProcessSession, original: FlowFile) -> list[FlowFile]:
        """The original's children, in the stream's order, each with its attributes and
        content; `Refused` (every child made so far removed) when the stream is damaged
        or empty."""
        made: list[FlowFile] = []
        pending: list[FlowFile] = []
        contents: list[bytes] = []
        restored: list[bool] = []  # per child: its package carried its own fragment.identifier
        held = 0

        def flush() -> None:
            nonlocal held
            made.extend(session.write_bytes_many(pending, contents))
            pending.clear()
            contents.clear()
            held = 0

        try:
            with session.read(original) as stream:
                for package in flowfile_v3.read_stream(cast(BinaryIO, stream), max_content=context["max_package_size"]):
                    pending.append(session.create(original, attributes=child_attributes(package.attributes)))
                    restored.append("fragment.identifier" in package.attributes)
                    contents.append(package.content)
                    held += len(package.content)
                    if held >= WRITE_TOGETHER:
                        flush()
            if pending:
                flush()
            if not made:
                raise Refused("the stream is empty: no package to unpack", 0)
        except FlowFileStreamError as error:
            for child in made + pending:
                session.remove(child)
            raise Refused(str(error), error.offset) from None
        except BaseException:
            for child in made + pending:
                session.remove(child)
            raise
        return self._with_fragments(session, original, made, restored)

    @staticmethod
    def _with_fragments(
        session: ProcessSession, original: FlowFile, children: list[FlowFile], restored: list[bool]
    ) -> list[FlowFile]:
        fragment = {
            "fragment.identifier": original.id,
            "fragment.count": str(len(children)),
            "segment.original.filename": original_filename(original.attributes.get("filename", "")),
        }
        done = []
        for index, (child, own) in enumerate(zip(children, restored, strict=True), start=1):
            if not own:  # one that carried its own keeps them, as NiFi restores them
                child = session.put_all_attributes(child, {**fragment, "fragment.index": str(index)})
            session.transfer(child, "success")
            done.append(child)
        return done

    @staticmethod
    def _fragment_of(original: FlowFile, children: list[FlowFile]) -> dict[str, str]:
        """What the original gets, as NiFi's `copyAttributesToOriginal`."""
        return {"fragment.identifier": original.id, "fragment.count": str(len(children))}

    def _refuse(self, context: ProcessContext, session: ProcessSession, original: FlowFile, refusal: Refused) -> None:
        context.limited_log.warning(
            f"{self.id}:unpack", "%s: %s goes to failure: %s", self.id, original.id, refusal.reason
        )
        attributes = {ERROR_ATTRIBUTE: refusal.reason[:1000]}
        if refusal.offset is not None:
            attributes[OFFSET_ATTRIBUTE] = str(refusal.offset)
        session.transfer(session.penalize(session.put_all_attributes(original, attributes)), "failure")
