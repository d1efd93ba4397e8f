#!/usr/bin/env python3
"""A stand-in OpenTelemetry collector for the tests: it takes OTLP/HTTP trace exports as a
collector does, and records each one, for the test to check the payload.

    collector.py RECORD      (RECORD "-": count the exports and keep nothing, for benchmarks)

Listens on a free loopback port; prints the port, then its own process id, one a line. Each
POST is answered as the OTLP/HTTP specification says a collector answers a full success
(https://opentelemetry.io/docs/specs/otlp/#full-success-1): 200 with an empty
ExportTraceServiceResponse in the request's encoding. Each request is recorded as one JSON line
in RECORD:

    {"path": "/v1/traces", "contentType": "...", "encoding": "json" | "protobuf" | "other",
     "body": <the JSON payload, for application/json>, "hex": "<the bytes, for protobuf>"}

A protobuf payload is read here with a wire-format reader of its own (no schema compiler) and
recorded in OTLP/JSON's shape ("body", ids as hex strings, as the specification's JSON
encoding has them), with the bytes too ("hex"); a JSON one is recorded as sent. The field
numbers are opentelemetry-proto's (collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
common/v1/common.proto, resource/v1/resource.proto).
"""
import http.server
import json
import os
import socketserver
import sys
import threading

record_path = sys.argv[1]
lock = threading.Lock()


def fields(data):
    """The protobuf wire format's fields of one message: (number, wire type, value) in order."""
    position, found = 0, []
    while position < len(data):
        key, position = varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = varint(data, position)
        elif wire == 1:
            value, position = data[position:position + 8], position + 8
        elif wire == 2:
            length, position = varint(data, position)
            value, position = data[position:position + length], position + length
        elif wire == 5:
            value, position = data[position:position + 4], position + 4
        else:
            raise ValueError("wire type %d at %d" % (wire, position))
        found.append((number, wire, value))
    return found


def varint(data, position):
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


def signed(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def any_value(data):
    # AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4.
    for number, wire, value in fields(data):
        if number == 1:
            return {"stringValue": value.decode("utf-8")}
        if number == 2:
            return {"boolValue": bool(value)}
        if number == 3:
            return {"intValue": str(signed(value))}
        if number == 4:
            import struct
            return {"doubleValue": struct.unpack("<d", value)[0]}
    return {}


def key_values(data_list):
    # KeyValue: key 1, value 2.
    result = []
    for data in data_list:
        entry = {}
        for number, wire, value in fields(data):
            if number == 1:
                entry["key"] = value.decode("utf-8")
            elif number == 2:
                entry["value"] = any_value(value)
        result.append(entry)
    return result


def span(data):
    # Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8,
    # attributes 9, status 15 (message 2, code 3).
    found, attributes = {}, []
    for number, wire, value in fields(data):
        if number == 1:
            found["traceId"] = value.hex()
        elif number == 2:
            found["spanId"] = value.hex()
        elif number == 4 and value:
            found["parentSpanId"] = value.hex()
        elif number == 5:
            found["name"] = value.decode("utf-8")
        elif number == 6:
            found["kind"] = value
        elif number == 7:
            found["startTimeUnixNano"] = str(int.from_bytes(value, "little"))
        elif number == 8:
            found["endTimeUnixNano"] = str(int.from_bytes(value, "little"))
        elif number == 9:
            attributes.append(value)
        elif number == 15:
            status = {}
            for inner, _, content in fields(value):
                if inner == 3:
                    status["code"] = content
                elif inner == 2:
                    status["message"] = content.decode("utf-8")
            found["status"] = status
    found["attributes"] = key_values(attributes)
    return found


def export_request(data):
    # ExportTraceServiceRequest: resource_spans 1. ResourceSpans: resource 1 (attributes 1),
    # scope_spans 2. ScopeSpans: scope 1 (name 1, version 2), spans 2.
    resource_spans = []
    for number, _, resource_data in fields(data):
        if number != 1:
            continue
        entry = {"resource": {"attributes": []}, "scopeSpans": []}
        for inner, _, value in fields(resource_data):
            if inner == 1:
                entry["resource"]["attributes"] = key_values([v for n, _, v in fields(value) if n == 1])
            elif inner == 2:
                scope = {"spans": []}
                for part, _, content in fields(value):
                    if part == 1:
                        scope["scope"] = {
                            ("name" if n == 1 else "version"): v.decode("utf-8")
                            for n, _, v in fields(content) if n in (1, 2)
                        }
                    elif part == 2:
                        scope["spans"].append(span(content))
                entry["scopeSpans"].append(scope)
        resource_spans.append(entry)
    return {"resourceSpans": resource_spans}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        entry = {"path": self.path, "contentType": content_type}
        if content_type == "application/json":
            entry["encoding"] = "json"
            try:
                entry["body"] = json.loads(body)
            except ValueError as error:
                entry["error"] = str(error)
            answer = b"{}"
        elif content_type == "application/x-protobuf" and record_path == "-":
            answer = b""
        elif content_type == "application/x-protobuf":
            entry["encoding"] = "protobuf"
            entry["hex"] = body.hex()
            try:
                entry["body"] = export_request(body)
            except (ValueError, IndexError, UnicodeDecodeError) as error:
                entry["error"] = "not an ExportTraceServiceRequest: %s" % error
            answer = b""  # an empty ExportTraceServiceResponse
        else:
            entry["encoding"] = "other"
            answer = b""
        if record_path != "-":
            with lock, open(record_path, "a") as record:
                record.write(json.dumps(entry) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", content_type or "application/octet-stream")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
print(os.getpid(), flush=True)
server.serve_forever()
