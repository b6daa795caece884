"""make_v1_fixture.py - writes sample logs in the original GPU Flight
client's v1 format (reference/gpuflight-original.md 1.8-1.9: per-session
folder, gzipped windows, .tmp/ active windows, columnar batches,
triplicated job_start/dictionary_update/shutdown) for `gpufl import`'s
test.  The files it wrote are committed under fixtures/gpuflight-v1/;
run it again only to change them:  python3 make_v1_fixture.py OUTDIR
"""
import gzip
import json
import os
import sys

SID = "3f2b8c1e-9d4a-4e6b-8f00-1a2b3c4d5e6f"
T0 = 1754500000000000000


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
           "scope_name_dict": {"1": "train_step", "2": "forward"}}
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
    device1 = [line(job), line(dic),
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
    scope1 = [line(job), line(dic),
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
                    "distinct_kernels": 2})]
    system1 = [line(job), line(dic),
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


if __name__ == "__main__":
    main(sys.argv[1])
