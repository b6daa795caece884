/*
 * tls.c - the server's certificate and private key for HTTPS: read with a
 * cap, checked at start with OpenSSL's parser (which the server already
 * links for SHA-256) so that a wrong file is a clear message instead of
 * libmicrohttpd's bare "cannot start", then handed to libmicrohttpd, which
 * serves TLS through GnuTLS.
 */
#include "srv_int.h"

#include "common/fsutil.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/log.h"

/* Largest PEM file read: a key, or a certificate with its chain. */
#define TLS_PEM_MAX (1u << 20)

/* The whole of a regular file of 1 to TLS_PEM_MAX bytes, NUL-ended. */
static int read_pem(const char *flag, const char *path, char **out, char *err,
                    size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;
    size_t n = 0;

    if (fd < 0) {
        snprintf(err, cap, "%s %s: %s", flag, path, strerror(errno));
        return GPUFL_EINVAL;
    }
    rc = fs_read_regular(fd, TLS_PEM_MAX, out, &n);
    close(fd);
    if (rc == 0 && n == 0) {
        free(*out);
        *out = NULL;
        errno = EINVAL;
        rc = -1;
    }
    if (rc) {
        if (errno == ENOMEM) {
            snprintf(err, cap, "out of memory");
            return GPUFL_ENOMEM;
        }
        snprintf(err, cap, "%s %s: not a regular file of 1 to %u bytes", flag,
                 path, TLS_PEM_MAX);
        return GPUFL_EINVAL;
    }
    return GPUFL_OK;
}

/* A password callback that gives none: an encrypted key is an error. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0;
}

static int check_pair(const srv_config *c, const char *cert, const char *key,
                      char *err, size_t cap)
{
    BIO *bc = BIO_new_mem_buf(cert, -1), *bk = BIO_new_mem_buf(key, -1);
    X509 *x = bc ? PEM_read_bio_X509(bc, NULL, no_password, NULL) : NULL;
    EVP_PKEY *k =
        bk ? PEM_read_bio_PrivateKey(bk, NULL, no_password, NULL) : NULL;
    int rc = GPUFL_EINVAL;

    if (!x)
        snprintf(err, cap, "--tls-cert %s: no PEM certificate in it",
                 c->tls_cert);
    else if (!k)
        snprintf(err, cap,
                 "--tls-key %s: no PEM private key in it (an encrypted key "
                 "is not supported)",
                 c->tls_key);
    else if (X509_check_private_key(x, k) != 1)
        snprintf(err, cap, "--tls-key %s is not the key of --tls-cert %s",
                 c->tls_key, c->tls_cert);
    else
        rc = GPUFL_OK;
    if (!rc && X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
        glog_warn("tls", "warning: --tls-cert %s has expired", c->tls_cert);
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(bc);
    BIO_free(bk);
    return rc;
}

int srv_tls_load(srv *s, char *err, size_t cap)
{
    const srv_config *c = &s->cfg;
    int rc;

    s->tls_cert = s->tls_key = NULL;
    if (!c->tls_cert[0] && !c->tls_key[0])
        return GPUFL_OK;
    if (!c->tls_cert[0] || !c->tls_key[0]) {
        snprintf(err, cap,
                 "--tls-cert and --tls-key go together (%s given "
                 "alone)",
                 c->tls_cert[0] ? "--tls-cert" : "--tls-key");
        return GPUFL_EINVAL;
    }
    if ((rc = read_pem("--tls-cert", c->tls_cert, &s->tls_cert, err, cap)) ||
        (rc = read_pem("--tls-key", c->tls_key, &s->tls_key, err, cap)) ||
        (rc = check_pair(c, s->tls_cert, s->tls_key, err, cap))) {
        srv_tls_free(s);
        return rc;
    }
    return GPUFL_OK;
}

void srv_tls_free(srv *s)
{
    if (s->tls_key)
        OPENSSL_cleanse(s->tls_key, strlen(s->tls_key));
    free(s->tls_key);
    free(s->tls_cert);
    s->tls_cert = s->tls_key = NULL;
}
