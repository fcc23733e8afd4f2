"""The encoding functions of the expression language, after NiFi's: each takes text and
returns text, or raises `ValueError` saying why it cannot.

- `urlEncode`/`urlDecode`: application/x-www-form-urlencoded in UTF-8, as Java's
  URLEncoder (a space is `+`; letters, digits and `.-*_` stay as they are);
- `base64Encode`/`base64Decode`: standard Base64 of the UTF-8 bytes;
- `escapeJson`/`unescapeJson`: the body of a JSON string (quotes, backslashes, `/`,
  control characters and every character past ASCII escaped);
- `escapeXml`/`unescapeXml`: the five XML entities;
- `escapeCsv`/`unescapeCsv`: RFC 4180 quoting, only where a value needs it;
- `escapeHtml4`/`unescapeHtml4`: HTML 4.01's named entities (the 252 of its DTDs) and,
  unescaping, numeric ones (`&#233;`, `&#xE9;`); `escapeHtml3`/`unescapeHtml3` the
  entities of HTML 3.2 only (`&quot; &amp; &lt; &gt;` and Latin-1). An apostrophe is
  not escaped and `&apos;` not read (neither is HTML 4), and an entity ends with `;`;
- `UUID3`/`UUID5`: the name-based UUID (RFC 4122: MD5, SHA-1) of the text in a
  namespace given as a UUID;
- `getUri`: a URI of its seven parts, as Java's seven-argument `java.net.URI`
  constructor builds one (RFC 2396): each part's characters that are not legal there
  quoted as `%XX` of their UTF-8 bytes (`%` always), non-ASCII ones kept;
- `hash`: the hex digest of the UTF-8 bytes by NiFi's algorithm names (MD5, SHA-1,
  SHA-256, SHA3-512, ...);
- `toRadix`/`fromRadix`: a whole number in base 2 to 36 (lower-case digits);
- `getDelimitedField`: one field of delimited text, quotes and escapes honoured.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import urllib.parse
import uuid
from html.entities import codepoint2name

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_XML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_XML_BACK = re.compile(r"&(amp|lt|gt|quot|apos);")
# HTML 4.01's entities; HTML 3.2 has the four of markup and Latin-1's (160-255)
_HTML4 = {chr(point): f"&{name};" for point, name in codepoint2name.items()}
_HTML3 = {char: entity for char, entity in _HTML4.items() if ord(char) < 256}
_HTML4_BACK = {entity[1:-1]: char for char, entity in _HTML4.items()}
_HTML3_BACK = {entity[1:-1]: char for char, entity in _HTML3.items()}
_HTML_ENTITY = re.compile(r"&(?:#([0-9]{1,8})|#[xX]([0-9a-fA-F]{1,8})|([A-Za-z][A-Za-z0-9]{0,15}));")
_HASHES = {
    "MD2": None,
    "MD5": "md5",
    "SHA": "sha1",
    "SHA-1": "sha1",
    "SHA-224": "sha224",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
    "SHA-512/224": "sha512_224",
    "SHA-512/256": "sha512_256",
    "SHA3-224": "sha3_224",
    "SHA3-256": "sha3_256",
    "SHA3-384": "sha3_384",
    "SHA3-512": "sha3_512",
}


def url_encode(text: str) -> str:
    return urllib.parse.quote_plus(text, safe="*").replace("~", "%7E")


def url_decode(text: str) -> str:
    return urllib.parse.unquote_plus(text, errors="strict")


def base64_encode(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def base64_decode(text: str) -> str:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True).decode()
    except (binascii.Error, UnicodeError) as error:
        raise ValueError(f"not Base64 of UTF-8 text: {error}") from None


def escape_json(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)[1:-1].replace("/", "\\/")


def unescape_json(text: str) -> str:
    try:
        return json.loads(f'"{text}"')
    except json.JSONDecodeError as error:
        raise ValueError(f"not the body of a JSON string: {error.msg} at {error.pos - 1}") from None


def escape_xml(text: str) -> str:
    return "".join(_XML.get(char, char) for char in text)


def unescape_xml(text: str) -> str:
    back = {entity[1:-1]: char for char, entity in _XML.items()}
    return _XML_BACK.sub(lambda match: back[match.group(1)], text)


def escape_csv(text: str) -> str:
    if any(char in text for char in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def unescape_csv(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        inner = text[1:-1]
        if any(char in inner for char in ',"\r\n'):
            return inner.replace('""', '"')
    return text


def escape_html(text: str, version: int) -> str:
    table = _HTML4 if version == 4 else _HTML3
    return "".join(table.get(char, char) for char in text)


def unescape_html(text: str, version: int) -> str:
    names = _HTML4_BACK if version == 4 else _HTML3_BACK

    def back(match: re.Match) -> str:
        decimal, hexadecimal, name = match.groups()
        if name is not None:
            return names.get(name, match.group(0))
        point = int(decimal, 10) if decimal is not None else int(hexadecimal, 16)
        return chr(point) if point <= 0x10FFFF else match.group(0)

    return _HTML_ENTITY.sub(back, text)


def name_uuid(text: str, namespace: str, version: int) -> str:
    try:
        space = uuid.UUID(namespace.strip())
    except ValueError:
        raise ValueError(f"the namespace {namespace[:64]!r} is not a UUID") from None
    made = uuid.uuid3(space, text) if version == 3 else uuid.uuid5(space, text)
    return str(made)


# What RFC 2396 allows, as java.net.URI quotes by it: unreserved and punctuation in the
# user info; those, "/" and "@" in a path; every reserved character in a query or fragment.
_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'()")
_USER_INFO = _UNRESERVED | frozenset(";:&=+$,")
_PATH = _USER_INFO | frozenset("/@")
_QUERY = _UNRESERVED | frozenset(";/?:@&=+$,[]")


def _quote_uri_part(text: str, legal: frozenset) -> str:
    out = []
    for char in text:
        if char in legal or (ord(char) > 127 and not char.isspace() and char.isprintable()):
            out.append(char)
        else:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8")))
    return "".join(out)


def java_uri(
    scheme: str | None,
    user_info: str | None,
    host: str | None,
    port: int,
    path: str | None,
    query: str | None,
    fragment: str | None,
) -> str:
    """The URI `java.net.URI(scheme, userInfo, host, port, path, query, fragment)` makes
    (a part that is None is left out, as is a port of -1)."""
    if scheme is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", scheme):
        raise ValueError(f"the scheme {scheme[:64]!r} is not a URI scheme")
    if not -1 <= port <= 65535:
        raise ValueError(f"the port {port} is not -1 (none) or a port number")
    parts = [f"{scheme}:"] if scheme is not None else []
    if user_info is not None or host is not None or port != -1:
        parts.append("//")
        if user_info is not None:
            parts.append(_quote_uri_part(user_info, _USER_INFO) + "@")
        if host is not None:
            parts.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
        if port != -1:
            parts.append(f":{port}")
    if path is not None:
        parts.append(_quote_uri_part(path, _PATH))
    if query is not None:
        parts.append("?" + _quote_uri_part(query, _QUERY))
    if fragment is not None:
        parts.append("#" + _quote_uri_part(fragment, _QUERY))
    return "".join(parts)


def hash_text(text: str, algorithm: str) -> str:
    name = _HASHES.get(algorithm.upper())
    if name is None:
        known = ", ".join(key for key, value in _HASHES.items() if value)
        raise ValueError(f"unknown hash algorithm {algorithm!r} (known: {known})")
    return hashlib.new(name, text.encode()).hexdigest()


def to_radix(number: int, radix: int, width: int = 0) -> str:
    if not 2 <= radix <= 36:
        raise ValueError(f"a radix is 2 to 36, not {radix}")
    digits = []
    value = abs(number)
    while True:
        value, digit = divmod(value, radix)
        digits.append(_DIGITS[digit])
        if not value:
            break
    text = "".join(reversed(digits)).zfill(max(width, 0))
    return "-" + text if number < 0 else text


def from_radix(text: str, radix: int) -> int:
    if not 2 <= radix <= 36:
        raise ValueError(f"a radix is 2 to 36, not {radix}")
    try:
        return int(text.strip(), radix)
    except ValueError:
        raise ValueError(f"{text[:64]!r} is not a number in base {radix}") from None


def delimited_field(
    text: str, index: int, delimiter: str = ",", quote: str = '"', escape: str = "\\", strip: bool = False
) -> str:
    """Field `index` (1 is the first) of `text`; empty when there is no such field."""
    if index < 1:
        raise ValueError(f"the field index starts at 1, not {index}")
    if len(delimiter) != 1:
        raise ValueError(f"the delimiter is one character, not {delimiter!r}")
    quote, escape = quote[:1], escape[:1]  # NiFi's quoted '\\' is two backslashes: the first counts
    fields: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif escape and char == escape:
            escaped = True
            current.append(char)
        elif quote and char == quote:
            quoted = not quoted
            current.append(char)
        elif char == delimiter and not quoted:
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    fields.append("".join(current))
    if index > len(fields):
        return ""
    field = fields[index - 1]
    if strip:
        field = field.strip()
        if quote and len(field) >= 2 and field[0] == quote and field[-1] == quote:
            field = field[1:-1]
    return field
