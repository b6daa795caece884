/*
 * err.c - gpufl_strerror(): the one table of error messages for every
 * component (the enum lives in include/gpufl/gpufl.h).
 */
#include <gpufl/gpufl.h>

const char *gpufl_strerror(int err)
{
    static const char *const msg[] = {
        [GPUFL_OK] = "success",
        [GPUFL_EINVAL] = "invalid argument or option value",
        [GPUFL_ENOMEM] = "out of memory",
        [GPUFL_EIO] = "input/output error",
        [GPUFL_EDISABLED] = "capture is disabled",
        [GPUFL_EALREADY] = "already initialised",
        [GPUFL_ENOTINIT] = "not initialised",
        [GPUFL_EUNAVAIL] = "library or device not available",
        [GPUFL_EPERM] = "permission denied",
        [GPUFL_ETOOBIG] = "value exceeds its size cap",
        [GPUFL_EPARSE] = "malformed input",
        [GPUFL_ENOSPC] = "not enough free disk space",
        [GPUFL_EFULL] = "buffer or table full",
        [GPUFL_ENOTFOUND] = "not found",
        [GPUFL_EAGAIN] = "temporary failure, try again",
        [GPUFL_ETIMEDOUT] = "timed out",
        [GPUFL_EPROTO] = "protocol error",
        [GPUFL_EAUTH] = "authentication failed",
        [GPUFL_ECONFLICT] = "incompatible options or state",
        [GPUFL_EINTERNAL] = "internal error (a bug: please report it)",
    };
    if (err < 0 || (size_t)err >= sizeof(msg) / sizeof(msg[0]) || !msg[err])
        return "unknown error";
    return msg[err];
}

const char *gpufl_version(void)
{
    return GPUFL_VERSION_STRING;
}
