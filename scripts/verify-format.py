#!/usr/bin/env python3
# An independent reader of docs/format.md, for checking fixtures/vectors/envelopes.json from outside
# Swift: written from the document alone. Needs: pip install cryptography pynacl.
#   scripts/verify-format.py fixtures/vectors/envelopes.json
import json, sys, hashlib, struct
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_decrypt as xdec

vectors = json.load(open(sys.argv[1]))["vectors"]
for v in vectors:
    env = bytes.fromhex(v["envelope"])
    assert env[:4] == bytes([0x89, 0x43, 0x53, 0x54]) and env[4] == 1
    alg, e, flags = env[5], env[6], env[7]
    n = struct.unpack(">H", env[8:10])[0]
    owner = env[10:10 + n].decode()
    version = struct.unpack(">I", env[10 + n:14 + n])[0]
    prefix = env[:14 + n]
    C = 1 << e
    if alg == 0:
        H = 14 + n
    elif alg in (3, 4):
        R = env[14 + n:46 + n]; K = env[46 + n:62 + n]
        H = 62 + n
        derived = hashlib.blake2b(b"custody data key v1\x00" + prefix + R, key=bytes.fromhex(v["accountKey"]), digest_size=48).digest()
        D = derived[:32]
        assert derived[32:] == K, "key check"
        assert D.hex() == v["dataKey"], "derived data key"
        P = bytes(7)
    else:
        p = 7 if alg == 1 else 19
        W = env[14 + n:38 + n]; Kw = env[38 + n:86 + n]; P = env[86 + n:86 + n + p]
        H = 86 + n + p
        D = xdec(Kw, prefix, W, bytes.fromhex(v["accountKey"]))
    header = env[:H]
    body = env[H:]
    out = b""; i = 0; pos = 0
    while True:
        rest = len(body) - pos
        last = rest < C + 16
        size = rest if last else C + 16
        assert size >= 16
        chunk = body[pos:pos + size]
        S = struct.pack(">I", i) + (b"\x01" if last else b"\x00")
        if alg == 0:
            T = hashlib.blake2b(header, digest_size=32).digest()
            tag = hashlib.blake2b(S + chunk[:-16], key=T, digest_size=16).digest()
            assert tag == chunk[-16:], "checksum"
            out += chunk[:-16]
        elif alg in (1, 3):
            out += AESGCM(D).decrypt(P + S, chunk, header)
        elif alg == 4:
            out += ChaCha20Poly1305(D).decrypt(P + S, chunk, header)
        else:
            out += xdec(chunk, header, P + S, D)
        pos += size; i += 1
        if last: break
    assert out == bytes.fromhex(v["plaintext"]), v["description"]
    print("ok:", v["description"], "| owner", owner, "| version", version, "| chunks", i)
