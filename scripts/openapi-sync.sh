#!/usr/bin/env bash
# docs/openapi.json is the service's contract, edited by hand. The service serves it from the
# binary (no file to lose beside a copied executable), so this script copies it, byte for byte,
# into Sources/CustodyServer/OpenAPIDocument.swift. A test fails while the two differ.
#   scripts/openapi-sync.sh          copy docs/openapi.json into the Swift source
#   scripts/openapi-sync.sh --check  exit 1 if they differ
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "$@" <<'PY'
import json, sys
document = open("docs/openapi.json", encoding="utf-8").read()
json.loads(document)  # refuse to embed a document that is not JSON
if '"""#' in document or '\\#(' in document:
    sys.exit("docs/openapi.json holds a sequence a Swift raw string cannot carry")
path = "Sources/CustodyServer/OpenAPIDocument.swift"
source = open(path, encoding="utf-8").read()
start = source.index('    static let text = #"""\n') + len('    static let text = #"""\n')
end = source.index('"""#\n', start)
# A Swift multi-line literal ends before the line break that precedes its closing delimiter:
# the document's own last line break needs one more after it.
embedded = source[start:end]
if "--check" in sys.argv:
    sys.exit(0 if embedded == document + "\n" else "docs/openapi.json and the served document differ: run scripts/openapi-sync.sh")
if not document.endswith("\n"):
    sys.exit("docs/openapi.json must end with a line break")
open(path, "w", encoding="utf-8").write(source[:start] + document + "\n" + source[end:])
PY
