// types.ts - the gpufl-server query API's answers as the UI reads them
// (docs/api.md, one interface per answer).  docs/api.md "Numbers": every ns
// time and duration, byte count and instruction/sector count is a `Dec`, a
// decimal string always (read it with big(), rel() or num()); every other
// integer is an `Int`, a number (a decimal string only past 2^53 - 1).
import type { Dec, Int } from './api';
import type { StreamGaps } from './gaps';
import type { TriggerFiring } from './dumps';

/* Every list answer: {"items": [...], "next": cursor|null}. */
export interface Page<T> {
  items: T[];
  next: string | null;
}

/* GET /hosts item. */
export interface HostItem {
  host: string;
  sessions: number;
  last_start_ns: Dec;
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
  start_ns: Dec;
  state: string;
  end_reason?: string | null;
  first_ts: Dec;
  last_ts: Dec;
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
  span_ns?: Dec;
  interval_ms?: number;
  gaps?: Record<string, StreamGaps>;
  /* the job members of the session line, absent when it had none
     (docs/api.md GET /sessions) */
  job?: string;
  rank?: number;
  world_size?: number;
  local_rank?: number;
  job_source?: string;
  step_scope?: string;
  sim_perturb?: string;
  /* a flight-recorder dump (docs/recorder.md): its mode and number, what
     fired in it; absent for other sessions */
  record?: string;
  dump?: number;
  trigger?: { count: number; last?: string; detail?: string };
  // GET /sessions/{id} only: each firing, oldest first
  recorder?: string;
  triggers?: TriggerFiring[];
  triggers_cut?: boolean;
}

/* GET /sessions/{id}/kernels item.  `name` is the display name (the
   demangled one when the client recorded it, docs/api.md "Names"),
   `mangled` the name as recorded (servers before it: absent). */
export interface KernelItem {
  kid: number;
  ts: Dec;
  dur: Dec;
  dev: number;
  stream: number;
  corr: number;
  name: string;
  mangled?: string;
  tid?: number | null;
  launch_ns?: Dec | null; // signed
  queue_ns?: Dec | null; // signed
  grid: number[];
  block: number[];
  regs: number;
  smem: number;
  occ: number | null;
  scope: number;
}

/* GET /sessions/{id}/kernels/{kid}. */
export interface KernelDetail extends KernelItem {
  end?: Dec;
  api_enter?: Dec | null;
  api_dur?: Dec | null;
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
  mangled?: string;
  count: number;
  total_ns: Dec;
  avg_ns: Dec;
  min_ns: Dec;
  p50_ns: Dec;
  p99_ns: Dec;
  max_ns: Dec;
  occ_avg: number | null;
  regs: number;
  smem: number;
}

/* GET /sessions/{id}/copies item (memcpy, memset, sync, alloc, free). */
export interface CopyItem {
  seq: number;
  type: 'memcpy' | 'memset' | 'sync' | 'alloc' | 'free';
  ts: Dec;
  dur?: Dec;
  dev: number;
  stream?: number;
  corr?: number;
  kind?: string;
  bytes?: Dec;
  scope?: number;
  flags?: number;
}

/* GET /sessions/{id}/calls: the CUDA API calls of a range per CPU thread,
   one by one when complete, else per column [pixel, calls started, busy ns]. */
export interface CallItem {
  type: 'launch' | 'memcpy' | 'memset' | 'sync';
  ts: Dec;
  dur: Dec;
  seq: number;
  corr: number;
  dev: number;
  stream: number;
  gpu_ts?: Dec;
  gpu_dur?: Dec;
  kind?: string;
  bytes?: Dec;
}

export interface CallsAnswer {
  from: Dec;
  to: Dec;
  complete: boolean;
  count: number;
  width?: number;
  bucket_ns?: Dec;
  threads: { tid: number; calls?: CallItem[]; buckets?: [number, number, Dec][] }[];
  threads_cut?: number;
}

/* GET /sessions/{id}/export: a Chrome trace-event file. */
export interface TraceEvent {
  name: string;
  cat?: string;
  ph: string;
  pid: number;
  tid: number;
  ts?: number; // µs from otherData.from
  dur?: number;
  args?: Record<string, unknown>;
}

export interface ExportAnswer {
  traceEvents: TraceEvent[];
  otherData: { session: string; from: Dec; to: Dec; truncated: boolean; kernels?: number; scopes?: number };
}

/* GET /sessions/{id}/scopes node. */
export interface ScopeNode {
  name: string;
  path: string;
  path_id: number;
  depth: number;
  instances: number;
  total_ns: Dec;
  self_ns: Dec;
  kernels: number;
  gpu_ns: Dec;
  kernels_total: number;
  gpu_ns_total: Dec;
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
    function_mangled?: string;
    inst: Dec;
    thread_inst: Dec;
    warp_efficiency: number;
    sectors?: Dec;
    sectors_ideal?: Dec;
    coalescing: number | null;
    pc_samples: Int;
  }[];
  instructions?: {
    function: string;
    function_mangled?: string;
    pc: Int;
    file?: string | null;
    line?: number;
    inst: Dec;
    warp_efficiency: number;
    coalescing: number | null;
    pc_samples: Int;
  }[];
  stalls?: { reason: string; samples: Int }[];
}

/* GET /compare item. */
export interface CompareAgg {
  count: number;
  total_ns: Dec;
  avg_ns: Dec;
  p50_ns: Dec;
  max_ns: Dec;
}

export interface CompareItem {
  name: string;
  mangled?: string;
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
  start: Dec;
  end: Dec;
  source: string;
  simulated: boolean;
  stacks: number;
  alloc_bytes: Dec;
  inuse_bytes: Dec;
}

/* GET /memory/ooms: one OOM report of gpufl memprof --oom, as listed. */
export interface OomItem {
  id: number;
  host: string;
  pid: number;
  comm: string | null;
  sid: string | null;
  ts: Dec;
  api: string;
  bytes: Dec;
  device: number | null;
  device_source: string;
  free_bytes: Dec | null;
  total_bytes: Dec | null;
  live_bytes: Dec;
  source: string;
  simulated: boolean;
}

/* GET /memory/ooms/{id}: the whole report (docs/api.md "OOM reports");
   stack members index `stacks` (frames root first, the API last). */
export interface OomReport {
  host: string;
  pid: number;
  comm: string | null;
  source: string;
  simulated: boolean;
  ts: Dec;
  request: { api: string; bytes: Dec; rc: number; tid: Int; stack: number };
  device: {
    source: string;
    index: number | null;
    free_bytes: Dec | null;
    total_bytes: Dec | null;
    process_bytes: Dec | null;
    why: string | null;
  };
  live: {
    bytes: Dec;
    count: Int;
    stacks: { stack: number; bytes: Dec; count: Int }[];
    truncated: boolean;
    host_bytes: Dec;
    untracked_count: Int;
  };
  recent: {
    window_ns: Dec;
    cut: boolean;
    events: { ts: Dec; tid: Int; op: 'alloc' | 'free' | 'fail'; api: string; bytes: Dec; stack: number }[];
  };
  fragmentation: {
    allocator: string | null;
    reserved_bytes: Dec;
    other_bytes: Dec;
    released_bytes: Dec;
    released_allocator_bytes: Dec;
    held_bytes: Dec;
    settle_ns: Dec;
    retries: { ts: Dec; ok: boolean }[];
    more_ooms: Int;
    exited: boolean;
  } | null;
  stacks: string[][];
}

export interface OomAnswer {
  id: number;
  sid: string | null;
  received: Dec;
  report: OomReport;
}

/* GET /fleet: the latest verdict per GPU and per session, by host. */
export interface FleetGpu {
  dev: number;
  uuid?: string;
  pci?: string;
  model?: string;
  state: string;
  since: Dec;
  ts: Dec;
  reasons: string[];
  signals?: Record<string, number | string>;
}

export interface FleetSession {
  session: string;
  pod?: string;
  devs?: number[];
  state: string;
  since: Dec;
  ts: Dec;
  action?: string;
  reasons: string[];
  signals?: Record<string, number | string>;
}

export interface FleetHost {
  host: string;
  simulated: boolean;
  ts: Dec;
  gpus: FleetGpu[];
  sessions: FleetSession[];
}

/* A capture request (docs/api.md "Capture requests"): POST
 * /hosts/{host}/captures answers one, GET /captures lists them. */
export interface CaptureProcess {
  pid: number;
  ok: boolean;
  error?: string;
  prefix?: string;
  dump?: number;
  for_ms?: number;
}
export interface CaptureRequest {
  id: number;
  host: string;
  pid: number | null;
  action: 'dump' | 'trace';
  for_ms: number | null;
  note: string | null;
  state: 'pending' | 'delivered' | 'done' | 'failed' | 'expired';
  created: number;
  expires: number;
  delivered: number | null;
  finished: number | null;
  reason: string | null;
  processes: CaptureProcess[] | null;
}

/* GET /jobs item (docs/api.md "Jobs"). */
export interface JobItem {
  job: string;
  app: string;
  ranks_seen: Int;
  sessions: Int;
  world_size: Int | null;
  state: 'running' | 'ended';
  start_ns: Dec;
  last_ts: Dec;
}

/* One rank of GET /jobs/{id}. */
export interface JobRank {
  rank: Int | null;
  local_rank?: Int;
  session: string;
  host: string;
  state: string;
  step_scope: string | null;
  steps: Int;
  step_median_ns: Dec;
  compute_median_ns: Dec;
  steps_ns: Dec[];
  kernel_ns: Dec;
  collective_ns: Dec;
  busy_share: number;
  collective_share: number;
  straggler: boolean;
}

/* A straggler and its evidence (docs/analysis.md "Stragglers"). */
export interface Straggler {
  rank: Int;
  session: string;
  ratio: number;
  lo: number;
  hi: number;
  p: number;
  noise: number;
  extra_ns: Dec;
  kernel: string | null;
  kernel_extra_ns: Dec;
  scope: string | null;
  scope_extra_ns: Dec;
  collective_wait_ns: Dec;
  evidence: string;
}

export interface JobDetail extends Omit<JobItem, 'sessions'> {
  compute_median_ns: Dec;
  truncated: boolean;
  ranks: JobRank[];
  stragglers: Straggler[];
  verdict: 'straggler' | 'no straggler' | 'not enough steps to judge';
}

export type RegressionKind = 'slower' | 'faster' | 'new' | 'vanished' | 'count';
export type RegressionSubject = 'kernel' | 'scope' | 'step' | 'memory';

/* GET /sessions/{id}/durations: the values the regression scan compares. */
export interface DurationSet {
  name?: string; // by_kernel
  path?: string; // by_scope
  count: Int;
  total_ns: Dec;
  values: Int[];
}
export interface Durations {
  session: string;
  sample: number;
  by_kernel: DurationSet[];
  by_scope: DurationSet[];
  truncated: boolean;
}

/* One finding of the regression scan (docs/api.md "Regressions"). */
export interface Regression {
  session: string;
  app: string;
  start_ns: Dec;
  kind: RegressionKind;
  /* what the finding is about (absent from servers before schema 18:
     kernel) */
  subject?: RegressionSubject;
  name: string;
  /* durations (kernel, scope, step); memory has the *_peak_bytes */
  base_median_ns?: Dec | null;
  cur_median_ns?: Dec | null;
  base_peak_bytes?: Dec | null;
  cur_peak_bytes?: Dec | null;
  ratio: number | null;
  lo: number | null;
  hi: number | null;
  p: number | null;
  noise: number | null;
  base_count: number;
  cur_count: Int;
  base_sessions: Int;
}

/* GET /sessions/{id}/regressions. */
export interface SessionRegressions {
  session: string;
  app: string;
  scanned: boolean;
  items: Regression[];
}
