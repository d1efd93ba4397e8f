#ifndef CUSTODY_CLIBCRYPTO_SHIM_H
#define CUSTODY_CLIBCRYPTO_SHIM_H

// OpenSSL 3's libcrypto from Debian's libssl-dev, for AES-256-GCM and ChaCha20-Poly1305 at the
// speed of the machine. Only CustodyProtection imports this module. The two functions below
// seal and open one chunk in one call from Swift rather than five, on a context that already
// holds its key (`key` NULL) or that they key in the same initialization as the nonce.

#include <openssl/evp.h>

/// Seals `count` bytes of `input` into `output` (the same length) and writes the 16-byte tag
/// to `tag`. `nonce` is 12 bytes; `key` 32 bytes, or NULL to keep the context's key; `cipher`
/// the algorithm for a context that has none (a new or reset one), else NULL. Returns 1 on
/// success, 0 on failure.
static inline int custody_aead_seal(EVP_CIPHER_CTX *context, const EVP_CIPHER *cipher, const unsigned char *key,
                                    const unsigned char *nonce,
                                    const unsigned char *aad, int aadCount,
                                    const unsigned char *input, int count,
                                    unsigned char *output, unsigned char *tag) {
    int written = 0;
    unsigned char none[16];
    if (output == NULL) output = none;
    if (EVP_CipherInit_ex2(context, cipher, key, nonce, 1, NULL) != 1) return 0;
    if (aadCount > 0 && EVP_CipherUpdate(context, NULL, &written, aad, aadCount) != 1) return 0;
    if (count > 0 && EVP_CipherUpdate(context, output, &written, input, count) != 1) return 0;
    if (EVP_CipherFinal_ex(context, output + (count > 0 ? written : 0), &written) != 1) return 0;
    return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
}

/// Opens `count` bytes of `input` with the 16-byte `tag` into `output`; `cipher` and `key` as
/// for sealing.
/// Returns 1 when the tag verifies, 0 otherwise (then `output` holds unauthenticated bytes: the
/// caller zeroes it).
static inline int custody_aead_open(EVP_CIPHER_CTX *context, const EVP_CIPHER *cipher, const unsigned char *key,
                                    const unsigned char *nonce,
                                    const unsigned char *aad, int aadCount,
                                    const unsigned char *input, int count,
                                    unsigned char *output, const unsigned char *tag) {
    int written = 0;
    unsigned char none[16];
    if (output == NULL) output = none;
    unsigned char tagCopy[16];
    for (int i = 0; i < 16; i++) tagCopy[i] = tag[i];
    if (EVP_CipherInit_ex2(context, cipher, key, nonce, 0, NULL) != 1) return 0;
    if (aadCount > 0 && EVP_CipherUpdate(context, NULL, &written, aad, aadCount) != 1) return 0;
    if (count > 0 && EVP_CipherUpdate(context, output, &written, input, count) != 1) return 0;
    if (EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, 16, tagCopy) != 1) return 0;
    return EVP_CipherFinal_ex(context, output + (count > 0 ? written : 0), &written) == 1;
}

#endif
