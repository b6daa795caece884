"""gpufl - Python binding of libgpufl, the gpufl GPU flight recorder.

    import gpufl
    gpufl.init(app="train", log_dir="./gpufl-logs")   # GPUFL_* env applies
    with gpufl.scope("train_step"):
        ...
    @gpufl.scope("eval")
    def evaluate(): ...
    gpufl.marker("epoch 1 done")
    gpufl.counter("samples").add(256)
    gpufl.shutdown()                                   # also runs at exit

The library is found, in this order, at $GPUFL_LIB, next to this package in
a source checkout (build/lib/libgpufl.so), then by the system's library
search (ctypes.util.find_library("gpufl"), libgpufl.so.0).  Options mirror
gpufl_options in include/gpufl/gpufl.h: same names, same defaults, same
GPUFL_* environment variables (libgpufl itself applies them), and keyword
arguments win over the environment.  See docs/python.md.
"""
import ctypes
import ctypes.util
import functools
import os
import threading

__all__ = ["init", "shutdown", "flush", "active", "session_id", "log_prefix",
           "version", "scope", "marker", "counter", "options", "GpuflError",
           "library_path", "FORMAT_VERSION"]

FORMAT_VERSION = 1


class GpuflError(RuntimeError):
    """A libgpufl call failed: .code is the gpufl_err value."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class _Options(ctypes.Structure):
    # include/gpufl/gpufl.h gpufl_options, field for field (fields are only
    # ever appended there, and sz -- ctypes.sizeof of this structure, passed
    # by _options_init -- tells the library which ones we know)
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("app", ctypes.c_char_p),
        ("log_dir", ctypes.c_char_p),
        ("log_prefix", ctypes.c_char_p),
        ("engines", ctypes.c_char_p),
        ("system_interval_ms", ctypes.c_uint32),
        ("rotate_bytes", ctypes.c_uint64),
        ("rotate_keep", ctypes.c_uint32),
        ("compress_rotated", ctypes.c_int),
        ("min_free_bytes", ctypes.c_uint64),
        ("ring_events", ctypes.c_uint32),
        ("flush_ms", ctypes.c_uint32),
        ("sim_seed", ctypes.c_uint64),
        ("sim_steps", ctypes.c_uint32),
        ("sim_devices", ctypes.c_uint32),
        ("sim_speed", ctypes.c_double),
        ("nvml_lib", ctypes.c_char_p),
        ("proc_root", ctypes.c_char_p),
        ("log", ctypes.c_void_p),
        ("log_ud", ctypes.c_void_p),
        ("log_level", ctypes.c_int),
        ("disabled", ctypes.c_int),
        ("cupti_lib", ctypes.c_char_p),
        ("stacks", ctypes.c_int),
        ("stack_depth", ctypes.c_uint32),
        ("cupti_flush_ms", ctypes.c_uint32),
        ("cupti_close_ms", ctypes.c_uint32),
        ("record", ctypes.c_char_p),
        ("triggers", ctypes.c_char_p),
        ("trigger_after_ms", ctypes.c_uint32),
        ("ctl", ctypes.c_int),
        ("trace", ctypes.c_int),
        ("job", ctypes.c_char_p),
        ("rank", ctypes.c_int32),
        ("world_size", ctypes.c_int32),
        ("local_rank", ctypes.c_int32),
        ("step_scope", ctypes.c_char_p),
        ("sim_perturb", ctypes.c_char_p),
    ]


# option name -> environment variable (docs/client.md); log/log_ud are C
# callbacks and not offered here
ENV = {
    "app": "GPUFL_APP", "log_dir": "GPUFL_LOG_DIR",
    "log_prefix": "GPUFL_LOG_PREFIX", "engines": "GPUFL_ENGINES",
    "system_interval_ms": "GPUFL_SYSTEM_INTERVAL_MS",
    "rotate_bytes": "GPUFL_ROTATE_BYTES", "rotate_keep": "GPUFL_ROTATE_KEEP",
    "compress_rotated": "GPUFL_ROTATE_ZSTD",
    "min_free_bytes": "GPUFL_MIN_FREE_BYTES",
    "ring_events": "GPUFL_RING_EVENTS", "flush_ms": "GPUFL_FLUSH_MS",
    "sim_seed": "GPUFL_SIM_SEED", "sim_steps": "GPUFL_SIM_STEPS",
    "sim_devices": "GPUFL_SIM_DEVICES", "sim_speed": "GPUFL_SIM_SPEED",
    "nvml_lib": "GPUFL_NVML_LIB", "proc_root": "GPUFL_PROC_ROOT",
    "log_level": "GPUFL_LOG_LEVEL", "disabled": "GPUFL_DISABLED",
    "cupti_lib": "GPUFL_CUPTI_LIB", "stacks": "GPUFL_STACKS",
    "stack_depth": "GPUFL_STACK_DEPTH", "cupti_flush_ms": "GPUFL_CUPTI_FLUSH_MS",
    "cupti_close_ms": "GPUFL_CUPTI_CLOSE_MS",
    "record": "GPUFL_RECORD", "triggers": "GPUFL_TRIGGERS",
    "trigger_after_ms": "GPUFL_TRIGGER_AFTER", "ctl": "GPUFL_CTL",
    "trace": "GPUFL_TRACE",
    "job": "GPUFL_JOB", "rank": "GPUFL_RANK", "world_size": "GPUFL_WORLD_SIZE",
    "local_rank": "GPUFL_LOCAL_RANK", "step_scope": "GPUFL_STEP_SCOPE",
    "sim_perturb": "GPUFL_SIM_PERTURB",
}
_LEVELS = {"error": 0, "warn": 1, "info": 2, "debug": 3, "off": -1, "none": -1}

_lib = None
_lib_path = None
_lock = threading.Lock()


def _candidates():
    env = os.environ.get("GPUFL_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for up in ("..", os.path.join("..", "..")):
        yield os.path.normpath(os.path.join(here, up, "build", "lib", "libgpufl.so"))
    found = ctypes.util.find_library("gpufl")
    if found:
        yield found
    yield "libgpufl.so.0"


def _load():
    global _lib, _lib_path
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(path)
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
                continue
            _declare(lib)
            _lib, _lib_path = lib, path
            return lib
        raise GpuflError(7, "libgpufl not found (tried: %s). Build it with "
                         "'make' in the gpufl repository (build/lib/libgpufl.so), "
                         "install it with 'make install', or set GPUFL_LIB to "
                         "its path." % "; ".join(tried))


def _declare(lib):
    c = ctypes
    sig = {
        "gpufl_strerror": (c.c_char_p, [c.c_int]),
        "gpufl_version": (c.c_char_p, []),
        # any gpufl_options mirror (older or newer than _Options): the
        # size passed with it is what libgpufl writes and reads
        "gpufl_options_init": (c.c_int, [c.c_void_p]),
        "gpufl_init": (c.c_int, [c.POINTER(_Options)]),
        "gpufl_shutdown": (None, []),
        "gpufl_flush": (c.c_int, [c.c_uint32]),
        "gpufl_active": (c.c_int, []),
        "gpufl_session_id": (c.c_char_p, []),
        "gpufl_log_prefix": (c.c_char_p, []),
        "gpufl_last_error": (c.c_char_p, []),
        "gpufl_scope_begin": (c.c_uint64, [c.c_char_p]),
        "gpufl_scope_end": (None, [c.c_uint64]),
        "gpufl_marker": (None, [c.c_char_p]),
        "gpufl_counter_get": (c.c_void_p, [c.c_char_p]),
        "gpufl_counter_add": (None, [c.c_void_p, c.c_int64]),
        "gpufl_counter_set": (None, [c.c_void_p, c.c_int64]),
    }
    if hasattr(lib, "gpufl_options_init_sz"):
        sig["gpufl_options_init_sz"] = (c.c_int, [c.c_void_p, c.c_size_t])
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def library_path():
    """The path of the libgpufl this module loaded (loads it if needed)."""
    _load()
    return _lib_path


def version():
    """libgpufl's version string, e.g. '0.1.0'."""
    return _load().gpufl_version().decode()


def _s(v):
    return None if v is None else str(v).encode()


def _options_init(o):
    """Fills the ctypes structure o (a gpufl_options mirror) with defaults
    and the GPUFL_* environment; libgpufl writes only ctypes.sizeof(o)
    bytes, so this package also runs against a libgpufl whose struct has
    more fields than it mirrors.  Returns the gpufl_err value."""
    lib = _load()
    if hasattr(lib, "gpufl_options_init_sz"):
        return lib.gpufl_options_init_sz(ctypes.byref(o), ctypes.sizeof(o))
    # a libgpufl from before gpufl_options_init_sz (0.1.0) writes its own
    # size, which is this package's (_Options has no field 0.1.0 lacks)
    return lib.gpufl_options_init(ctypes.byref(o))


def _defaults():
    o = _Options()
    rc = _options_init(o)
    return o, rc


def options(**overrides):
    """The options gpufl.init(**overrides) would use: defaults, then the
    GPUFL_* environment, then the keyword arguments, as a dict."""
    o, _ = _defaults()
    out = {}
    for name, _t in _Options._fields_:
        if name in ("sz", "log", "log_ud"):
            continue
        v = getattr(o, name)
        out[name] = v.decode() if isinstance(v, bytes) else v
    for k, v in overrides.items():
        if k not in out:
            raise TypeError("unknown gpufl option %r (known: %s)"
                            % (k, ", ".join(sorted(out))))
        out[k] = v
    return out


def init(**kw):
    """Start the session (gpufl_init).  Keyword arguments are gpufl_options
    fields (app, log_dir, engines, system_interval_ms, rotate_bytes,
    sim_steps, sim_speed, ...); the rest come from the defaults and the
    GPUFL_* environment.  Returns the session id, or None when capture is
    disabled (GPUFL_DISABLED / disabled=True).  Raises GpuflError."""
    lib = _load()
    o, _ = _defaults()
    keep = []
    names = {n for n, _ in _Options._fields_} - {"sz", "log", "log_ud"}
    for k, v in kw.items():
        if k not in names:
            raise TypeError("unknown gpufl option %r (known: %s)"
                            % (k, ", ".join(sorted(names))))
        if v is None:
            continue
        t = dict(_Options._fields_)[k]
        if t is ctypes.c_char_p:
            b = _s(v)
            keep.append(b)
            setattr(o, k, b)
        elif k == "log_level" and isinstance(v, str):
            o.log_level = _LEVELS[v.lower()]
        elif t is ctypes.c_double:
            o.sim_speed = float(v)
        else:
            setattr(o, k, int(v))
    rc = lib.gpufl_init(ctypes.byref(o))
    del keep
    if rc == 4:  # GPUFL_EDISABLED
        return None
    if rc:
        raise GpuflError(rc, "gpufl_init: %s: %s" % (
            lib.gpufl_strerror(rc).decode(),
            (lib.gpufl_last_error() or b"").decode(errors="replace")))
    return session_id()


def shutdown():
    """Flush and close the session (safe to call twice)."""
    _load().gpufl_shutdown()


def flush(timeout_ms=1000):
    """Make every event recorded so far reach the files."""
    rc = _load().gpufl_flush(int(timeout_ms))
    if rc:
        raise GpuflError(rc, "gpufl_flush: %s" % _lib.gpufl_strerror(rc).decode())


def active():
    return bool(_load().gpufl_active())


def session_id():
    return _load().gpufl_session_id().decode()


def log_prefix():
    return _load().gpufl_log_prefix().decode()


class scope:
    """A named scope: `with gpufl.scope("x"):` or `@gpufl.scope("x")`.
    Scopes nest per thread; GPU work recorded inside is attributed to the
    innermost one."""

    __slots__ = ("name", "_b", "_tok")

    def __init__(self, name):
        self.name = name
        self._b = str(name).encode()
        self._tok = threading.local()

    def __enter__(self):
        stack = getattr(self._tok, "s", None)
        if stack is None:
            stack = self._tok.s = []
        stack.append(_load().gpufl_scope_begin(self._b))
        return self

    def __exit__(self, *exc):
        _lib.gpufl_scope_end(self._tok.s.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapper


def marker(text):
    """An instant event with a text (cut at 100 bytes by libgpufl)."""
    _load().gpufl_marker(str(text).encode())


class Counter:
    """A named counter (gpufl_counter_get); written while it changes."""

    def __init__(self, name, handle):
        self.name = name
        self._h = handle

    def add(self, delta=1):
        if self._h:
            _lib.gpufl_counter_add(self._h, int(delta))

    def set(self, value):
        if self._h:
            _lib.gpufl_counter_set(self._h, int(value))


def counter(name):
    """The counter called name (created on first use; a no-op object when
    no session is running)."""
    return Counter(name, _load().gpufl_counter_get(str(name).encode()))
