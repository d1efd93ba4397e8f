#!/usr/bin/env bash
# How to clear an OpenSSL context after one message, measured on this machine's libcrypto: what
# `OpenSSLCipher`'s per-thread contexts do after every buffer of one chunk (issue 28, target 4).
#
# For AES-256-GCM and ChaCha20-Poly1305, 2,000,000 messages of 1 KiB each (key and nonce set in
# one initialization, 102 bytes of associated data, seal, tag), the cases alternating, two rounds:
#   zero-key clear   the context re-keyed with an all-zero key after each message
#   no clear         the data key's schedule left in the context (what no build does)
#   reset            EVP_CIPHER_CTX_reset after each message, the cipher set again with the key
#   new/free         a context made and freed per message (the library floor's way)
# and an initialization alone (key only, nonce only): what OpenSSL 3.0's parameter look-ups cost.
#
#   scripts/bench-context-clear.sh
#
# Needs a C compiler and libssl-dev (both in `make test`'s packages).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/clear" scripts/bench/context-clear.c -lcrypto
openssl version
for algorithm in AES-256-GCM ChaCha20-Poly1305; do
    echo "== $algorithm"
    "$WORK/clear" "$algorithm"
done
