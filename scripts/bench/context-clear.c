// Ways to clear an OpenSSL AEAD context after one message: see scripts/bench-context-clear.sh.
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned char key[32] = {1}, zero[32], nonce[12], aad[102], input[1024], output[1024], tag[16];

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec + time.tv_nsec * 1e-9;
}

static void seal(EVP_CIPHER_CTX *context) {
    int written;
    if (EVP_CipherUpdate(context, NULL, &written, aad, sizeof aad) != 1
        || EVP_CipherUpdate(context, output, &written, input, sizeof input) != 1
        || EVP_CipherFinal_ex(context, output + written, &written) != 1
        || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1) {
        fprintf(stderr, "OpenSSL failed to seal\n");
        exit(1);
    }
}

static void report(const char *name, double started, int count) {
    printf("%-16s %7.1f ns a message\n", name, (now() - started) / count * 1e9);
}

int main(int argc, char **argv) {
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, argc > 1 ? argv[1] : "AES-256-GCM", NULL);
    if (cipher == NULL) { fprintf(stderr, "no such cipher\n"); return 1; }
    const int count = 2000000;
    for (int round = 1; round <= 2; round++) {
        printf("round %d\n", round);
        EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
        EVP_CipherInit_ex2(context, cipher, NULL, NULL, 1, NULL);
        double started = now();
        for (int i = 0; i < count; i++) {
            EVP_CipherInit_ex2(context, NULL, key, nonce, 1, NULL);
            seal(context);
            EVP_CipherInit_ex2(context, NULL, zero, NULL, -1, NULL);
        }
        report("zero-key clear", started, count);
        started = now();
        for (int i = 0; i < count; i++) {
            EVP_CipherInit_ex2(context, NULL, key, nonce, 1, NULL);
            seal(context);
        }
        report("no clear", started, count);
        started = now();
        for (int i = 0; i < count; i++) {
            EVP_CipherInit_ex2(context, cipher, key, nonce, 1, NULL);
            seal(context);
            EVP_CIPHER_CTX_reset(context);
        }
        report("reset", started, count);
        started = now();
        for (int i = 0; i < count; i++) {
            EVP_CIPHER_CTX *fresh = EVP_CIPHER_CTX_new();
            EVP_CipherInit_ex2(fresh, cipher, key, nonce, 1, NULL);
            seal(fresh);
            EVP_CIPHER_CTX_free(fresh);
        }
        report("new/free", started, count);
        EVP_CipherInit_ex2(context, cipher, NULL, NULL, 1, NULL);
        started = now();
        for (int i = 0; i < count; i++) EVP_CipherInit_ex2(context, NULL, zero, NULL, -1, NULL);
        report("key alone", started, count);
        started = now();
        for (int i = 0; i < count; i++) EVP_CipherInit_ex2(context, NULL, NULL, nonce, -1, NULL);
        report("nonce alone", started, count);
        EVP_CIPHER_CTX_free(context);
    }
    EVP_CIPHER_free(cipher);
    return 0;
}
