"""Schemathesis hooks for the contract run (SCHEMATHESIS_HOOKS=scripts/contract/hooks.py).

POST /v1/decisions/batch takes `application/x-ndjson`, a media type schemathesis has no
serializer for: without this one it reports the operation untestable in that media type. The
document describes the body as a string of JSON lines, so the string is sent as its UTF-8 bytes.
"""

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    # A negative test may put another JSON value where the lines go: sent as JSON text.
    import json

    return json.dumps(value).encode("utf-8")


@schemathesis.deserializer("application/x-ndjson")
def ndjson_answer(ctx, response):
    # The document describes the answer as one string (the lines), so it is validated as such.
    return response.content.decode("utf-8")
