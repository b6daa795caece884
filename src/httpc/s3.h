/*
 * s3.h - the S3 calls gpufl needs: the agent's archiver (PUT of a file,
 * multipart above S3_PART_BYTES) and the server's cold tier of kernel
 * blocks (PUT, GET and DELETE of an object held in memory), signed with AWS Signature Version 4 computed here with OpenSSL's
 * HMAC-SHA256 (not libcurl's CURLOPT_AWS_SIGV4, whose 7.88 release neither
 * sorts nor encodes query strings, which multipart's "?uploads" needs).
 * Path-style URLs: {endpoint}/{bucket}/{key}.  The secret never leaves
 * this file except as HMAC output.
 */
#ifndef GPUFL_HTTPC_S3_H
#define GPUFL_HTTPC_S3_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Bodies up to this size go in one PUT; larger ones as multipart parts
 * of this size (S3's minimum part is 5 MiB). */
#define S3_PART_BYTES (8u << 20)
/* Most parts in one upload (S3's own limit). */
#define S3_MAX_PARTS 10000

typedef struct s3_client s3_client;

typedef struct s3_header {
    const char *name; /* lower case */
    const char *value;
} s3_header;

/* Not thread-safe: one client per thread, or a lock around its calls.
 * endpoint e.g. "http://127.0.0.1:7480"; all strings are copied.
 * ca_file: the CAs an https endpoint is verified with (NULL: the
 * system's).  NULL with the reason in why[why_cap] on failure. */
s3_client *s3_client_new(const char *endpoint, const char *bucket,
                         const char *region, const char *access_key,
                         const char *secret_key, uint64_t timeout_ms,
                         const char *ca_file, char *why, size_t why_cap);
void s3_client_free(s3_client *s);

/*
 * Uploads the file at path as object key (single PUT up to
 * S3_PART_BYTES, multipart above).  Returns 0, or -1 with a reason
 * (HTTP status and S3 error code, never a secret) in why.
 */
int s3_put_file(s3_client *s, const char *key, const char *path, char *why,
                size_t why_cap);

/* What s3_get and s3_delete return besides 0 and -1: no such object. */
#define S3_NOTFOUND 1

/* PUT of len bytes at buf as object key (one request; len at most
 * S3_PART_BYTES).  0, or -1 with a reason in why. */
int s3_put(s3_client *s, const char *key, const void *buf, size_t len,
           char *why, size_t why_cap);

/* GET of object key into out (emptied first; its cap bounds the object:
 * a bigger one is an error, and out is left empty).  0, S3_NOTFOUND, or -1 with a reason in why. */
int s3_get(s3_client *s, const char *key, gbuf *out, char *why, size_t why_cap);

/* DELETE of object key: 0 (deleted, or there was none: S3 answers 204
 * either way), or -1 with a reason in why. */
int s3_delete(s3_client *s, const char *key, char *why, size_t why_cap);

/*
 * The SigV4 Authorization header value for one request, exposed for the
 * reference-vector test.  headers (sorted by name, lower case) are the
 * signed headers; query is the canonical query string (sorted, encoded).
 */
int s3_sign(const char *method, const char *uri, const char *query,
            const s3_header *headers, size_t nheaders,
            const char *payload_sha256_hex, const char *amz_date,
            const char *region, const char *service, const char *access_key,
            const char *secret_key, char *out, size_t out_cap);

/* RFC 3986 encoding as SigV4 wants it; '/' kept when keep_slash. */
size_t s3_uri_encode(const char *in, int keep_slash, char *out, size_t cap);

#endif
