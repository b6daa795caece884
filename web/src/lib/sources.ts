// sources.ts - the timeline's other lanes, shaped from the API's answers:
// CUDA API calls per CPU thread (GET .../calls), copies, memsets and syncs
// (GET .../copies) and scope instances with their names and depths (the
// scope slices of GET .../export).  Offsets are ns from the session's first
// event.
import { num } from './api';
import { hexColor } from './raster';
import { tileSpan } from './tiles';
import type { CallItem, CallsAnswer, CopyItem, ExportAnswer } from './types';

export const CALL_COLORS: Record<string, number> = {
  launch: hexColor('#5b8def'),
  memcpy: hexColor('#d9a441'),
  memset: hexColor('#b0884a'),
  sync: hexColor('#7d4b4b'),
};
export const COPY_COLORS: Record<string, number> = {
  htod: hexColor('#d9a441'),
  dtoh: hexColor('#41b3d9'),
  dtod: hexColor('#9a7fd1'),
  memset: hexColor('#b0884a'),
  sync: hexColor('#7d4b4b'),
  other: hexColor('#8f8f8f'),
};
export const SCOPE_COLOR = hexColor('#3f7f6b');

export interface Call {
  t: number;
  dur: number;
  type: CallItem['type'];
  kid: number; // the line's seq: a launch's kernel id
  corr: number;
  dev: number;
  stream: number;
  gpuT: number | null;
  gpuDur: number;
  kind?: string;
  bytes: number;
}

/* One tile of API calls: per thread, the calls (complete) or columns. */
export interface CallTile {
  res: number;
  idx: number;
  t0: number;
  t1: number;
  complete: boolean;
  count: number;
  threads: Map<number, { calls: Call[] | null; cols: { t: number; res: number; share: number; n: number }[] }>;
}

export function parseCalls(a: CallsAnswer, res: number, idx: number, base: bigint): CallTile {
  const t0 = idx * tileSpan(res);
  const threads: CallTile['threads'] = new Map();
  const bw = a.bucket_ns !== undefined ? num(a.bucket_ns) : res;
  for (const th of a.threads) {
    const calls = a.complete && th.calls ? th.calls.map((c) => callOf(c, base)) : null;
    const cols = (th.buckets ?? []).map(([p, n, busy]) => ({
      t: t0 + p * bw,
      res: bw,
      share: num(busy) / Math.max(1, bw),
      n,
    }));
    threads.set(th.tid, { calls, cols });
  }
  return { res, idx, t0, t1: t0 + tileSpan(res), complete: a.complete, count: a.count, threads };
}

export function callOf(c: CallItem, base: bigint): Call {
  return {
    t: Number(BigInt(c.ts) - base),
    dur: num(c.dur),
    type: c.type,
    kid: c.seq,
    corr: c.corr,
    dev: c.dev,
    stream: c.stream,
    gpuT: c.gpu_ts !== undefined && c.gpu_ts !== null ? Number(BigInt(c.gpu_ts) - base) : null,
    gpuDur: num(c.gpu_dur),
    kind: c.kind,
    bytes: num(c.bytes),
  };
}

export interface CopySpan {
  t: number;
  dur: number;
  color: number;
  seq: number;
  kind: string; // the lane's kind: memcpy htod, memset, sync
  bytes: number;
  dev: number;
}

/* Copies as spans per lane (cLane key -> spans in time order); allocs and
   frees are not drawn (they take no GPU time). */
export function copySpans(
  rows: CopyItem[],
  base: bigint,
): Map<string, { dev: number; kind: string; spans: CopySpan[] }> {
  const out = new Map<string, { dev: number; kind: string; spans: CopySpan[] }>();
  for (const c of rows) {
    if (c.type === 'alloc' || c.type === 'free') continue;
    const kind = c.type === 'memcpy' ? 'memcpy ' + (c.kind ?? '?') : c.type;
    const key = 'c' + c.dev + ':' + kind;
    let l = out.get(key);
    if (!l) out.set(key, (l = { dev: c.dev, kind, spans: [] }));
    l.spans.push({
      t: Number(BigInt(c.ts) - base),
      dur: Math.max(0, num(c.dur)),
      color:
        c.type === 'memcpy'
          ? (COPY_COLORS[c.kind ?? ''] ?? COPY_COLORS.other)
          : (COPY_COLORS[c.type] ?? COPY_COLORS.other),
      seq: c.seq,
      kind,
      bytes: num(c.bytes),
      dev: c.dev,
    });
  }
  for (const l of out.values()) l.spans.sort((a, b) => a.t - b.t);
  return out;
}

export interface ScopeSpan {
  t: number;
  dur: number;
  name: string;
  path: string;
  depth: number; // 0: a root scope
  tid: number;
  id: number;
  color: number;
}

/* The scope instances of an export answer (its "scope" slices: host
   process, one thread each), with their depth from their nesting on their
   thread (an instance inside another one of its thread is one deeper; the
   export holds every instance that overlaps the range, so the ancestors of
   one in the range are there too). */
export function scopesOf(a: ExportAnswer, base: bigint): ScopeSpan[] {
  const from = Number(BigInt(a.otherData.from) - base);
  const out: ScopeSpan[] = [];
  for (const e of a.traceEvents) {
    if (e.cat !== 'scope' || e.ph !== 'X' || e.ts === undefined) continue;
    // µs with three decimals: ns exact
    out.push({
      t: from + Math.round(e.ts * 1000),
      dur: Math.round((e.dur ?? 0) * 1000),
      name: e.name,
      path: typeof e.args?.path === 'string' ? (e.args.path as string) : '',
      depth: 0,
      tid: e.tid,
      id: typeof e.args?.id === 'number' ? (e.args.id as number) : 0,
      color: SCOPE_COLOR,
    });
  }
  out.sort((p, q) => p.t - q.t || q.dur - p.dur);
  const open = new Map<number, ScopeSpan[]>();
  for (const x of out) {
    let st = open.get(x.tid);
    if (!st) open.set(x.tid, (st = []));
    while (st.length && st[st.length - 1].t + st[st.length - 1].dur <= x.t) st.pop();
    x.depth = st.length;
    x.path = x.path || [...st.map((p) => p.name), x.name].join('/');
    st.push(x);
  }
  return out;
}
