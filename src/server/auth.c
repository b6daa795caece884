/*
 * auth.c - bearer tokens: the admin token, API keys and their roles.
 *
 * Secrets are never stored: only their SHA-256, in hex, so a leaked
 * database or data folder grants nothing.  A presented token is hashed and
 * the hash compared with CRYPTO_memcmp (admin) or looked up by value (keys:
 * the lookup compares hashes, which reveal nothing about the secret).
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/log.h"

/* Longest bearer token we will hash. */
#define AUTH_TOKEN_MAX 512
/* Shortest admin token accepted from the configuration: 32 characters of
 * `openssl rand -hex 32` hold 128 bits, as a generated token's 64 do
 * 256. */
#define AUTH_ADMIN_MIN 32
/* The placeholder of the deploy folder's env examples: never a token. */
#define AUTH_PLACEHOLDER "change-me"
#define ADMIN_HASH_FILE "admin_token.sha256"

void srv_sha256(const void *s, size_t n, unsigned char out[32])
{
    unsigned int len = 32;
    EVP_Digest(s, n, out, &len, EVP_sha256(), NULL);
}

void srv_hex(const unsigned char *b, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int srv_token_new(const char *kind, char *out, size_t cap)
{
    unsigned char r[32];
    char hex[65];
    size_t got = 0;

    while (got < sizeof(r)) {
        ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return GPUFL_EIO;
        }
        got += (size_t)n;
    }
    srv_hex(r, sizeof(r), hex);
    if ((size_t)snprintf(out, cap, "%s_%s", kind, hex) >= cap)
        return GPUFL_ETOOBIG;
    return GPUFL_OK;
}

static const char *const roles[] = { "none", "ingest", "read", "admin" };

const char *srv_role_name(int role)
{
    return role >= 0 && role <= ROLE_ADMIN ? roles[role] : "none";
}

int srv_role_parse(const char *name)
{
    for (int i = ROLE_INGEST; i <= ROLE_ADMIN; i++)
        if (strcmp(name, roles[i]) == 0)
            return i;
    return ROLE_NONE;
}

int srv_auth_role(srv *s, const char *h, char *hosts, size_t hosts_cap)
{
    unsigned char hash[32];
    char hex[65], role[16];
    size_t n;

    if (hosts_cap)
        hosts[0] = '\0';
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return ROLE_NONE;
    h += 7;
    while (*h == ' ')
        h++;
    n = strlen(h);
    if (n == 0 || n > AUTH_TOKEN_MAX)
        return ROLE_NONE;
    srv_sha256(h, n, hash);
    if (s->have_admin && CRYPTO_memcmp(hash, s->admin_hash, 32) == 0)
        return ROLE_ADMIN;
    srv_hex(hash, 32, hex);
    /* a key we could not look up is not a wrong key: the client must
     * retry, not be told to check its token */
    if (srv_store_key_lookup(s->store, hex, role, sizeof(role), hosts,
                             hosts_cap))
        return ROLE_UNKNOWN;
    return srv_role_parse(role);
}

static int hex_decode(const char *s, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[2 * i + k];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= (unsigned)(c - 'a' + 10);
            else
                return -1;
        }
        out[i] = (unsigned char)v;
    }
    return 0;
}

/* Stores the admin token's hash: into a temporary file, synced, then
 * renamed over the final name, so a failed write (a full disk) leaves no
 * file behind, never an empty or cut one that would block later starts. */
static int store_hash(const char *path, const char *hex)
{
    char tmp[SRV_STR_MAX + 80], dir[SRV_STR_MAX + 64], buf[80];
    const char *slash = strrchr(path, '/');
    int fd, n, rc = GPUFL_EIO;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    n = snprintf(buf, sizeof(buf), "%s\n", hex);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        goto fail;
    errno = 0;
    if (write(fd, buf, (size_t)n) != n) {
        if (errno == 0)
            errno = ENOSPC; /* a short write: the disk filled */
        close(fd);
        goto fail;
    }
    if (fsync(fd) != 0) {
        close(fd);
        goto fail;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0)
        goto fail;
    /* the rename itself is durable once the folder is synced */
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return GPUFL_OK;
fail:
    glog_error("auth",
               "cannot store the admin token's hash in %s: %s;"
               " not starting",
               path, strerror(errno));
    unlink(tmp);
    return rc;
}

int srv_admin_init(srv *s)
{
    char path[SRV_STR_MAX + 64], token[96], hex[65], buf[80];
    int fd, rc;
    ssize_t n;

    if (s->cfg.admin_token[0]) {
        size_t len = strlen(s->cfg.admin_token);
        if (len < AUTH_ADMIN_MIN ||
            !strncmp(s->cfg.admin_token, AUTH_PLACEHOLDER,
                     strlen(AUTH_PLACEHOLDER))) {
            glog_error(
                "auth",
                "the admin token %s; make one with"
                " `openssl rand -hex 32` (or `head -c 32 /dev/urandom |"
                " base64`), or leave --admin-token unset to have one"
                " generated; not starting",
                len < AUTH_ADMIN_MIN
                    ? "is shorter than 32 characters"
                    : "is the example file's placeholder (change-me...)");
            return GPUFL_EINVAL;
        }
        srv_sha256(s->cfg.admin_token, strlen(s->cfg.admin_token),
                   s->admin_hash);
        s->have_admin = 1;
        return GPUFL_OK;
    }
    snprintf(path, sizeof(path), "%s/%s", s->cfg.data_dir, ADMIN_HASH_FILE);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        /* an empty file is what a failed first start of an older version
         * left on a full disk: no token was ever shown for it */
        if (n != 0) {
            if (n < 64 || hex_decode(buf, s->admin_hash, 32)) {
                glog_error("auth",
                           "%s is corrupt; remove it to get a"
                           " new admin token",
                           path);
                return GPUFL_EPARSE;
            }
            s->have_admin = 1;
            return GPUFL_OK;
        }
    } else if (errno != ENOENT) {
        glog_error("auth", "cannot read %s: %s", path, strerror(errno));
        return GPUFL_EIO;
    }
    if (srv_token_new("gfa", token, sizeof(token))) {
        glog_error("auth", "cannot generate an admin token: %s",
                   strerror(errno));
        return GPUFL_EIO;
    }
    srv_sha256(token, strlen(token), s->admin_hash);
    srv_hex(s->admin_hash, 32, hex);
    if ((rc = store_hash(path, hex)) != 0)
        return rc;
    s->have_admin = 1;
    printf("gpufl-server: generated admin token (shown once, stored hashed "
           "in %s):\n%s\n",
           path, token);
    fflush(stdout);
    return GPUFL_OK;
}

/* A host name a key may be bound to: what gethostname gives, printable,
 * no comma (the separator) and no space. */
static int host_name_ok(const char *p, size_t n)
{
    if (n == 0 || n > 255)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] <= ' ' || p[i] > '~' || p[i] == ',')
            return 0;
    return 1;
}

int srv_key_hosts_check(const char *hosts, const char *role, char *why,
                        size_t cap)
{
    size_t n = 0;

    if (!hosts || !hosts[0])
        return 0;
    if (strcmp(role, "ingest") != 0) {
        snprintf(why, cap, "hosts bind ingest keys only");
        return -1;
    }
    if (strlen(hosts) >= SRV_KEY_HOSTS_MAX) {
        snprintf(why, cap, "hosts: at most %d bytes in all",
                 SRV_KEY_HOSTS_MAX - 1);
        return -1;
    }
    for (const char *p = hosts;;) {
        size_t len = strcspn(p, ",");
        if (!host_name_ok(p, len)) {
            snprintf(why, cap,
                     "hosts: '%.*s' is no host name (1 to 255 printable "
                     "characters, no comma or space)",
                     (int)(len > 64 ? 64 : len), p);
            return -1;
        }
        if (++n > SRV_KEY_HOSTS_N) {
            snprintf(why, cap, "hosts: at most %d", SRV_KEY_HOSTS_N);
            return -1;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    return 0;
}

int srv_key_host_ok(const char *hosts, const char *host, size_t n)
{
    if (!hosts || !hosts[0])
        return 1;
    for (const char *p = hosts;;) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, host, n) == 0)
            return 1;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

int srv_key_create(srv *s, const char *name, const char *role,
                   const char *hosts, char *secret, size_t cap, int64_t *id)
{
    unsigned char h[32];
    char hex[65], prefix[16], why[160];
    int rc;

    if (srv_role_parse(role) == ROLE_NONE ||
        srv_key_hosts_check(hosts, role, why, sizeof(why)))
        return GPUFL_EINVAL;
    if ((rc = srv_token_new("gfk", secret, cap)) != 0)
        return rc;
    srv_sha256(secret, strlen(secret), h);
    srv_hex(h, 32, hex);
    /* "gfk_" and 8 hex digits identify a key in listings */
    snprintf(prefix, sizeof(prefix), "%.12s", secret);
    return srv_store_key_add(s->store, name, role, prefix, hex, hosts, id);
}
