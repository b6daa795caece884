// types.ts - the gpufl-server query API's answers as the UI reads them
// (docs/api.md, one interface per answer).  Fields that can hold a 64-bit
// integer (epoch-ns times, ns sums, byte counts) are `Int`: such a value may
// arrive as a string (api.ts), so read it with big(), rel() or Number().
import type { Int } from './api';
import type { StreamGaps } from './gaps';

/* Every list answer: {"items": [...], "next": cursor|null}. */
export interface Page<T> {
  items: T[];
  next: string | null;
}

/* GET /hosts item. */
export interface HostItem {
  host: string;
  sessions: number;
  last_start_ns: Int;
  apps: string;
}

/* A device of the session line (docs/events.md "devices[]"). */
export interface Device {
  id: number;
  name: string;
  uuid?: string;
  pci?: string;
  driver?: string;
  cc?: string;
  sms?: number;
  mem?: Int;
  power_limit?: number;
  simulated?: boolean;
}

/* GET /sessions item; GET /sessions/{id} adds the header's properties. */
export interface Session {
  id: string;
  app: string;
  host: string;
  pid: number;
  start_ns: Int;
  state: string;
  end_reason?: string | null;
  first_ts: Int;
  last_ts: Int;
  last_seen: number;
  keep?: boolean;
  simulated: boolean;
  counts: { lines: number; kernels: number; ops?: number; scopes?: number; samples?: number; profile?: number };
  streams_ended?: string[];
  /* lines the server is missing (docs/api.md "gaps") */
  missing?: Int;
  // GET /sessions/{id} only:
  devices?: Device[];
  engines?: Record<string, string>;
  cmd?: string;
  lib?: string;
  span_ns?: Int;
  interval_ms?: number;
  gaps?: Record<string, StreamGaps>;
}

/* GET /sessions/{id}/kernels item. */
export interface KernelItem {
  kid: number;
  ts: Int;
  dur: Int;
  dev: number;
  stream: number;
  corr: number;
  name: string;
  grid: number[];
  block: number[];
  regs: number;
  smem: number;
  occ: number | null;
  scope: number;
}

/* GET /sessions/{id}/kernels/{kid}. */
export interface KernelDetail extends KernelItem {
  end?: Int;
  api_enter?: Int | null;
  api_dur?: Int | null;
  launch_cfg?: number | null;
  cooperative?: boolean;
  limiter?: string | null;
  local_mem?: number;
  dyn_smem?: number;
  path?: string | null;
  stack: { frames: string[] } | null;
}

/* GET /sessions/{id}/kernels/aggregate item. */
export interface KernelAgg {
  name: string;
  count: number;
  total_ns: Int;
  avg_ns: Int;
  min_ns: Int;
  p50_ns: Int;
  p99_ns: Int;
  max_ns: Int;
  occ_avg: number | null;
  regs: number;
  smem: number;
}

/* GET /sessions/{id}/copies item (memcpy, memset, sync, alloc, free). */
export interface CopyItem {
  seq: number;
  type: 'memcpy' | 'memset' | 'sync' | 'alloc' | 'free';
  ts: Int;
  dur?: Int;
  dev: number;
  stream?: number;
  corr?: number;
  kind?: string;
  bytes?: Int;
  scope?: number;
  flags?: number;
}

/* GET /sessions/{id}/timeline: lanes of [pixel, kernels, busy ns, name id]. */
export interface TimelineAnswer {
  from: Int;
  to: Int;
  width: number;
  bucket_ns: Int;
  level: Int | 'raw';
  lanes: { dev: number; stream: number; buckets: [number, number, number, number][] }[];
  names: Record<string, string>;
}

/* GET /sessions/{id}/scopes node. */
export interface ScopeNode {
  name: string;
  path: string;
  path_id: number;
  depth: number;
  instances: number;
  total_ns: Int;
  self_ns: Int;
  kernels: number;
  gpu_ns: Int;
  kernels_total: number;
  gpu_ns_total: Int;
  children: ScopeNode[];
}

export interface ScopeTree {
  items: ScopeNode[];
  paths: number;
}

/* GET /sessions/{id}/profile. */
export interface ProfileAnswer {
  functions: {
    function: string;
    inst: Int;
    thread_inst: Int;
    warp_efficiency: number;
    sectors?: Int;
    sectors_ideal?: Int;
    coalescing: number | null;
    pc_samples: Int;
  }[];
  instructions?: {
    function: string;
    pc: Int;
    file?: string | null;
    line?: number;
    inst: Int;
    warp_efficiency: number;
    coalescing: number | null;
    pc_samples: Int;
  }[];
  stalls?: { reason: string; samples: Int }[];
}

/* GET /compare item. */
export interface CompareAgg {
  count: number;
  total_ns: Int;
  avg_ns: Int;
  p50_ns: Int;
  max_ns: Int;
}

export interface CompareItem {
  name: string;
  a: CompareAgg | null;
  b: CompareAgg | null;
  avg_change_pct: number | null;
}

/* GET /memory/profiles item. */
export interface MemProfile {
  id: number;
  host: string;
  pid: number;
  comm?: string | null;
  sid: string | null;
  start: Int;
  end: Int;
  source: string;
  simulated: boolean;
  stacks: number;
  alloc_bytes: Int;
  inuse_bytes: Int;
}

/* GET /fleet: the latest verdict per GPU and per session, by host. */
export interface FleetGpu {
  dev: number;
  uuid?: string;
  pci?: string;
  model?: string;
  state: string;
  since: Int;
  ts: Int;
  reasons: string[];
  signals?: Record<string, number | string>;
}

export interface FleetSession {
  session: string;
  pod?: string;
  devs?: number[];
  state: string;
  since: Int;
  ts: Int;
  action?: string;
  reasons: string[];
  signals?: Record<string, number | string>;
}

export interface FleetHost {
  host: string;
  simulated: boolean;
  ts: Int;
  gpus: FleetGpu[];
  sessions: FleetSession[];
}
