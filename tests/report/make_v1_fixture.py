"""make_v1_fixture.py - writes sample logs in the original GPU Flight
client's v1 format (github.com/gpu-flight/gpufl-client; docs/report.md,
"gpufl import", describes what is read) for `gpufl import`'s test:

- a v1.2+ session folder (gzipped windows, .tmp/ active windows, columnar
  batches, triplicated job_start/dictionary_update/shutdown/segment_start
  and isa_source_map batch, profile_sample_batch rows of both kinds, a
  sass channel, lines with no gpufl equivalent);
- the flat v1.0-1.1 layout: base "bench" with two sessions appended to it,
  rotated bench.<ch>.2.log.gz (oldest), bench.<ch>.1.log.gz and the active
  bench.<ch>.log, whose device file ends in a cut line;
- three files of the v0 layout (old.{kernel,scope,system}.0.log), which
  gpufl import recognises and skips.

The files it wrote are committed under fixtures/gpuflight-v1/; run it
again only to change them:  python3 make_v1_fixture.py OUTDIR
"""
import gzip
import json
import os
import sys

SID = "3f2b8c1e-9d4a-4e6b-8f00-1a2b3c4d5e6f"
T0 = 1754500000000000000
SA = "aaaaaaaa-1111-4222-8333-444444444444"  # flat layout, first run
SB = "bbbbbbbb-5555-4666-8777-888888888888"  # flat layout, second run
T1 = T0 + 10 * 10**9
T2 = T0 + 20 * 10**9
PROF_COLS = ["dt_ns", "corr_id", "device_id", "function_id", "pc_offset",
             "metric_id", "metric_value", "stall_reason", "sample_kind",
             "scope_name_id", "source_file_id", "source_line"]
# metric_dict of the v1.2 session: SASS metric names and CUPTI stall
# reason names as the original logs them (CUPTI's metric names)
METRICS = {"4": "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
           "5": "smsp__sass_inst_executed",
           "6": "smsp__sass_thread_inst_executed",
           "7": "smsp__sass_sectors_mem_global",
           "8": "smsp__sass_sectors_mem_global_op_ld_ideal",
           "9": "smsp__sass_sectors_mem_global_op_st_ideal",
           "10": "smsp__pcsamp_warps_issue_stalled_barrier",
           "11": "smsp__sass_sectors_mem_global_ideal",
           "12": "smsp__sass_branch_targets",  # not one gpufl maps
           "13": "smsp__pcsamp_warps_issue_stalled_mio-throttle"}
METRICS.update({str(20 + i): "smsp__pcsamp_warps_issue_stalled_r%d" % i
                for i in range(10)})


def prof(sid, bid, base, rows):
    return {"version": 1, "type": "profile_sample_batch", "session_id": sid,
            "batch_id": bid, "base_time_ns": base, "columns": PROF_COLS,
            "rows": rows}


def prof_rows():
    """One batch: PC sampling (kind 0) and SASS (kind 1) rows, one row per
    metric, for (device, function, pc, scope) keys that gpufl import folds."""
    r = []
    # kind 0, func 2, pc 464: long_scoreboard twice (summed), barrier,
    # mio-throttle (key mio_throttle), an id not in metric_dict (reason_12)
    for mid, val, idx in ((4, 137, 7), (10, 5, 3), (4, 3, 7), (13, 2, 9),
                          (99, 1, 12)):
        r.append([0, 1041, 0, 2, 464, mid, val, idx, 0, 1, 1, 58])
    # kind 0, func 2, pc 480: ten reasons, the 9th and 10th left out
    for i in range(10):
        r.append([10, 1041, 0, 2, 480, 20 + i, i + 1, 20 + i, 0, 1, 1, 59])
    # kind 1, func 2, pc 464: inst in two rows, ideal sectors of loads
    # and stores added up
    for mid, val in ((5, 4096), (6, 131072), (7, 4096), (8, 1024),
                     (9, 1024), (5, 4096)):
        r.append([20, 0, 0, 2, 464, mid, val, 0, 1, 1, 1, 58])
    # kind 1, func 2, pc 496: inst without thread_inst (a half pair)
    for mid, val in ((5, 100), (7, 10), (11, 10)):
        r.append([30, 0, 0, 2, 496, mid, val, 0, 1, 1, 1, 60])
    # kind 1, an unknown SASS metric name
    r.append([30, 0, 0, 2, 496, 12, 77, 0, 1, 1, 1, 60])
    # kind 1 on device 1, another function and scope, no source file
    for mid, val in ((5, 10), (6, 320), (7, 4), (11, 4)):
        r.append([40, 0, 1, 5, 16, mid, val, 0, 1, 2, 0, 0])
    return r


def line(o):
    return json.dumps(o, separators=(",", ":")) + "\n"


def main(out):
    root = os.path.join(out, SID)
    os.makedirs(os.path.join(root, ".tmp"), exist_ok=True)
    job = {"version": 1, "type": "job_start", "pid": 4121, "app": "train",
           "session_id": SID, "log_path": "./runs", "ts_ns": T0,
           "hostname": "node7", "ip_addr": "10.0.0.7",
           "host": {"cpu_pct": 3.5, "ram_used_mib": 20480, "ram_total_mib": 64000},
           "devices": [{"id": 0, "name": "GPU-A", "uuid": "GPU-1234", "vendor": "NVIDIA",
                        "pci_bus": 1, "used_mib": 500, "free_mib": 23500, "total_mib": 24000,
                        "util_gpu_pct": 0, "util_mem_pct": 0, "temp_c": 40, "power_mw": 30000,
                        "clk_gfx_mhz": 210, "clk_sm_mhz": 210, "clk_mem_mhz": 405,
                        "throttle_pwr": 0, "throttle_therm": 0, "pcie_rx_bw_bps": 0,
                        "pcie_tx_bw_bps": 0}],
           "gpu_static_devices": [{"id": 0, "name": "NVIDIA A10G", "uuid": "GPU-1234",
                                   "vendor": "NVIDIA", "architecture": "Ampere",
                                   "compute_major": 8, "compute_minor": 6,
                                   "l2_cache_size_bytes": 6291456,
                                   "shared_mem_per_block_bytes": 49152,
                                   "regs_per_block": 65536, "multi_processor_count": 80,
                                   "warp_size": 32}],
           "cuda_static_devices": [], "rocm_static_devices": [],
           "session_kind": "trace", "profiling_engine": "nvidia.trace"}
    dic = {"version": 1, "type": "dictionary_update", "session_id": SID,
           "kernel_dict": {"3": "vecAdd(float*,float*,int)", "4": "gemm_kernel"},
           "scope_name_dict": {"1": "train_step", "2": "forward"},
           "function_dict": {"2": "vecAdd(float*,float*,int)", "5": "gemm_kernel"},
           "metric_dict": METRICS, "source_file_dict": {"1": "vecadd.cu"}}
    seg = {"version": 1, "type": "segment_start", "session_id": SID,
           "run_id": "run-1", "segment_index": 0, "ts_ns": T0 + 1,
           "actual_start_ns": T0 + 1, "previous_session_id": None,
           "requested_boundary_ns": None, "boundary_delay_ns": 0,
           "deferred_by": None}
    isa = prof(SID, 7, T0 + 2500000, [[0, 0, 0, 2, 464, 0, 0, 0, 2, 0, 1, 58],
                                       [0, 0, 0, 2, 480, 0, 0, 0, 2, 0, 1, 59]])
    kb = lambda bid, base, rows: {
        "version": 1, "type": "kernel_event_batch", "session_id": SID,
        "batch_id": bid, "base_time_ns": base,
        "columns": ["dt_ns", "kernel_id", "stream_id", "duration_ns", "corr_id",
                    "dyn_shared", "num_regs", "has_details", "external_kind",
                    "external_id"], "rows": rows}
    det = lambda corr, grid, block, occ, lim: {
        "type": "kernel_detail", "session_id": SID, "pid": 4121, "app": "train",
        "corr_id": corr, "grid": grid, "block": block, "static_shared": 1024,
        "local_bytes": 0, "const_bytes": 0, "occupancy": occ,
        "reg_occupancy": occ, "smem_occupancy": 1.0, "warp_occupancy": 1.0,
        "block_occupancy": 1.0, "limiting_resource": lim, "max_active_blocks": 6,
        "local_mem_total_bytes": 0, "local_mem_per_thread_bytes": 0,
        "cache_config_requested": 0, "cache_config_executed": 0,
        "shared_mem_executed_bytes": 0, "user_scope": "train_step|forward",
        "stack_trace": "main|train_step|launch_add"}
    device1 = [line(job), line(dic), line(seg), line(isa),
               line(kb(1, T0 + 1000000, [[0, 3, 7, 15230, 1041, 0, 32, 1, 0, 0],
                                         [20480, 3, 7, 15102, 1045, 0, 32, 1, 0, 0],
                                         [40000, 4, 7, 250000, 1046, 49152, 128, 0, 0, 0]])),
               line(det(1041, "(4096,1,1)", "(256,1,1)", 1.0, "warps")),
               line(det(1045, "(4096,1,1)", "(256,1,1)", 1.0, "warps")),
               line({"version": 1, "type": "memcpy_event_batch", "session_id": SID,
                     "batch_id": 2, "base_time_ns": T0 + 900000,
                     "columns": ["dt_ns", "stream_id", "duration_ns", "bytes",
                                 "copy_kind", "corr_id"],
                     "rows": [[0, 7, 50000, 1048576, 1, 1040],
                              [400000, 7, 25000, 262144, 2, 1047]]}),
               line({"type": "memset_event", "pid": 4121, "app": "train",
                     "session_id": SID, "name": "memset", "platform": "cuda",
                     "device_id": "0", "stream_id": "7", "stack_trace": "",
                     "user_scope": "train_step", "scope_depth": 1,
                     "start_ns": T0 + 950000, "end_ns": T0 + 960000,
                     "api_start_ns": T0 + 940000, "api_exit_ns": T0 + 941000,
                     "corr_id": 1039, "bytes": 4096})]
    scope1 = [line(job), line(dic), line(seg), line(isa),
              line({"version": 3, "type": "scope_event_batch", "session_id": SID,
                    "batch_id": 1, "base_time_ns": T0 + 500000,
                    "columns": ["dt_ns", "scope_instance_id", "name_id", "event_type",
                                "depth", "repeat", "warmup", "original_start_ns"],
                    "rows": [[0, 5, 1, 0, 0, 0, 0, T0 + 500000],
                             [100000, 6, 2, 0, 1, 0, 0, T0 + 600000],
                             [2000000, 6, 2, 1, 1, 0, 0, T0 + 600000],
                             [3000000, 5, 1, 1, 0, 0, 0, T0 + 500000]]}),
              line({"type": "nvtx_marker_event", "pid": 4121, "app": "train",
                    "session_id": SID, "name": "epoch 1", "domain": "default",
                    "start_ns": T0 + 400000, "end_ns": T0 + 400000,
                    "duration_ns": 0, "marker_id": 1}),
              line({"version": 1, "type": "execution_signature", "session_id": SID,
                    "ts_ns": T0 + 3500000, "scope_name": "train_step",
                    "signature": "1234567890123456789", "launch_count": 3,
                    "distinct_kernels": 2}),
              line(prof(SID, 3, T0 + 2000000, prof_rows())),
              line({"version": 1, "type": "pm_sample_batch", "session_id": SID,
                    "batch_id": 4, "base_time_ns": T0 + 3000000,
                    "columns": ["sample_index", "dt_ns", "device_id", "metric_id",
                                "value", "scope_name_id"],
                    "rows": [[0, 0, 0, 5, 81.5, 1], [1, 1000000, 0, 5, 79.25, 1]]})]
    system1 = [line(job), line(dic), line(seg), line(isa),
               line({"version": 1, "type": "device_metric_batch", "session_id": SID,
                     "batch_id": 9, "base_time_ns": T0 + 1000000,
                     "columns": ["dt_ns", "device_id", "gpu_util", "mem_util", "temp_c",
                                 "power_mw", "used_mib", "total_mib", "clock_sm"],
                     "rows": [[0, 0, 97, 41, 66, 212000, 9100, 24000, 1710],
                              [100000000, 0, 98, 40, 67, 215500, 9200, 24000, 1710]]}),
               line({"version": 1, "type": "host_metric_batch", "session_id": SID,
                     "hostname": "node7", "ip_addr": "10.0.0.7", "batch_id": 9,
                     "base_time_ns": T0 + 1000000,
                     "columns": ["dt_ns", "cpu_pct_x100", "ram_used_mib", "ram_total_mib"],
                     "rows": [[0, 1250, 20500, 64000]]})]
    shut = {"type": "shutdown", "pid": 4121, "app": "train", "session_id": SID,
            "ts_ns": T0 + 200000000}
    for ch, lines in (("device", device1), ("scope", scope1), ("system", system1)):
        with open(os.path.join(root, "%s.1.log.gz" % ch), "wb") as f:
            f.write(gzip.compress("".join(lines).encode(), mtime=0))
    # the active windows: one more kernel batch, the shutdown, and a line
    # cut by a crash at the end of the device window
    with open(os.path.join(root, ".tmp", "device.log"), "w") as f:
        f.write(line(kb(2, T0 + 5000000, [[0, 4, 7, 260000, 1050, 49152, 128, 0, 0, 0]])))
        f.write(line(shut))
        f.write('{"version":1,"type":"kernel_event_batch","session_id":"%s","ba' % SID)
    for ch in ("scope", "system"):
        with open(os.path.join(root, ".tmp", "%s.log" % ch), "w") as f:
            f.write(line(shut))
    # the sass channel: disassembly, no gpufl equivalent
    sass = {"version": 1, "type": "cubin_disassembly", "session_id": SID,
            "cubin_crc": 1234567, "function_name": "_Z6vecAddPfS_i",
            "entries": [{"pc": 464, "sass": "LDG.E R2, [R2.64]"},
                        {"pc": 480, "sass": "FADD R4, R2, R3", "count": 2}]}
    with open(os.path.join(root, "sass.1.log.gz"), "wb") as f:
        f.write(gzip.compress(line(sass).encode(), mtime=0))
    flat(out)
    v0(out)


def flat(out):
    """v1.0-1.1: <base>.<ch>.log active, <base>.<ch>.<i>.log.gz rotated with
    1 = newest; two runs appended to base "bench" (sessions SA then SB)."""
    def job(sid, t):
        return line({"version": 1, "type": "job_start", "pid": 77, "app": "bench",
                     "session_id": sid, "log_path": "./bench.log", "ts_ns": t,
                     "hostname": "node3", "ip_addr": "10.0.0.3",
                     "gpu_static_devices": [{"id": 0, "name": "NVIDIA L4",
                                             "compute_major": 8, "compute_minor": 9,
                                             "multi_processor_count": 58}],
                     "cuda_static_devices": [], "session_kind": "trace"})

    def dic(sid, kname, fname):
        # the same original ids name other things in the other session
        return line({"version": 1, "type": "dictionary_update", "session_id": sid,
                     "kernel_dict": {"1": kname}, "scope_name_dict": {"1": "step"},
                     "function_dict": {"7": fname},
                     "metric_dict": {"1": "smsp__sass_inst_executed",
                                     "2": "smsp__sass_thread_inst_executed",
                                     "3": "smsp__pcsamp_warps_issue_stalled_wait",
                                     "4": "smsp__pcsamp_warps_issue_stalled_short_scoreboard"}})

    def kb(sid, base, rows):
        return line({"version": 1, "type": "kernel_event_batch", "session_id": sid,
                     "batch_id": 1, "base_time_ns": base,
                     "columns": ["dt_ns", "kernel_id", "stream_id", "duration_ns",
                                 "corr_id", "dyn_shared", "num_regs", "has_details",
                                 "external_kind", "external_id"],
                     "rows": [[dt, 1, 1, dur, corr, 0, 16, 0, 0, 0]
                              for dt, dur, corr in rows]})

    def sc(sid, base, rows):
        return line({"version": 3, "type": "scope_event_batch", "session_id": sid,
                     "batch_id": 1, "base_time_ns": base,
                     "columns": ["dt_ns", "scope_instance_id", "name_id", "event_type",
                                 "depth", "repeat", "warmup", "original_start_ns"],
                     "rows": rows})

    def dm(sid, base, util):
        return line({"version": 1, "type": "device_metric_batch", "session_id": sid,
                     "batch_id": 1, "base_time_ns": base,
                     "columns": ["dt_ns", "device_id", "gpu_util", "mem_util", "temp_c",
                                 "power_mw", "used_mib", "total_mib", "clock_sm"],
                     "rows": [[0, 0, util, 10, 50, 70000, 1000, 23000, 2040]]})

    def shut(sid, t):
        return line({"type": "shutdown", "pid": 77, "app": "bench",
                     "session_id": sid, "ts_ns": t})

    files = {
        "device.2.log.gz": [job(SA, T1), dic(SA, "kA", "fA"),
                            kb(SA, T1 + 1000, [(0, 100, 1), (1000, 110, 2)])],
        "device.1.log.gz": [kb(SA, T1 + 3000, [(0, 120, 3)]), shut(SA, T1 + 10**6),
                            job(SB, T2), dic(SB, "kB", "fB"),
                            kb(SB, T2 + 1000, [(0, 200, 1)])],
        "device.log": [kb(SB, T2 + 5000, [(0, 210, 2), (1000, 220, 3)]),
                       shut(SB, T2 + 10**6),
                       '{"version":1,"type":"kernel_event_batch","session_id":"%s","ba' % SB],
        "scope.2.log.gz": [job(SA, T1), dic(SA, "kA", "fA"),
                           sc(SA, T1 + 500, [[0, 1, 1, 0, 0, 0, 0, T1 + 500]])],
        "scope.1.log.gz": [sc(SA, T1 + 4000, [[0, 1, 1, 1, 0, 0, 0, T1 + 500]]),
                           line(prof(SA, 2, T1 + 4100,
                                     [[0, 0, 0, 7, 32, 1, 64, 0, 1, 1, 0, 0],
                                      [0, 0, 0, 7, 32, 2, 1024, 0, 1, 1, 0, 0]])),
                           line({"pid": 77, "app": "bench", "session_id": SA,
                                 "type": "graph_launch_event", "start_ns": T1 + 5000,
                                 "end_ns": T1 + 6000, "duration_ns": 1000,
                                 "graph_id": 3, "device_id": 0, "stream_id": 1,
                                 "corr_id": 9, "graph_exec_key": "0x5a"}),
                           shut(SA, T1 + 10**6), job(SB, T2), dic(SB, "kB", "fB")],
        "scope.log": [sc(SB, T2 + 100, [[0, 1, 1, 0, 0, 0, 0, T2 + 100],
                                        [6900, 1, 1, 1, 0, 0, 0, T2 + 100]]),
                      line(prof(SB, 2, T2 + 7100,
                                [[0, 5, 0, 7, 48, 3, 30, 4, 0, 1, 0, 0],
                                 [0, 5, 0, 7, 48, 4, 12, 5, 0, 1, 0, 0]])),
                      line({"version": 1, "type": "pm_sample_batch", "session_id": SB,
                            "batch_id": 3, "base_time_ns": T2 + 8000,
                            "columns": ["sample_index", "dt_ns", "device_id",
                                        "metric_id", "value", "scope_name_id"],
                            "rows": [[0, 0, 0, 1, 12.5, 1]]}),
                      shut(SB, T2 + 10**6)],
        "system.2.log.gz": [job(SA, T1), dic(SA, "kA", "fA"), dm(SA, T1 + 1000, 10)],
        "system.1.log.gz": [dm(SA, T1 + 2000, 20), shut(SA, T1 + 10**6),
                            job(SB, T2), dic(SB, "kB", "fB")],
        "system.log": [dm(SB, T2 + 3000, 30), shut(SB, T2 + 10**6)],
    }
    for name, lines in files.items():
        path = os.path.join(out, "bench." + name)
        data = "".join(lines).encode()
        if name.endswith(".gz"):
            data = gzip.compress(data, mtime=0)
        with open(path, "wb") as f:
            f.write(data)


def v0(out):
    """v0 (docs/report.md "gpufl import"): recognised by name, not converted."""
    lines = {"kernel": {"type": "kernel_event", "pid": 5, "app": "old",
                        "device_id": "0", "grid": "(1,1,1)", "block": "(32,1,1)"},
             "scope": {"type": "scope_begin", "pid": 5, "app": "old", "name": "s"},
             "system": {"type": "system_sample", "pid": 5, "app": "old"}}
    for ch, o in lines.items():
        with open(os.path.join(out, "old.%s.0.log" % ch), "w") as f:
            f.write(line({"type": "init", "pid": 5, "app": "old",
                          "system_rate_ms": 100}) + line(o))


if __name__ == "__main__":
    main(sys.argv[1])
