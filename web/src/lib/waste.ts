// waste.ts - the Fleet view's waste panels (GET /api/v1/fleet/waste,
// docs/api.md "Fleet waste"): the answer's shape, the stacked chart of
// wasted GPU-hours by reason, the per-GPU verdict strips laid out in
// pixels, the top wasters' order and the GPU-hour and money formats.
// Pure: the view (views/FleetWaste.tsx) only draws what these return.
import { big, type Int } from './api';
import { niceCeil } from './jobs';
import { formatHash } from './url';

/* The reasons a GPU-second counts as wasted, in stacking order (bottom up). */
export const REASONS = ['idle', 'held', 'phantom', 'stuck', 'allocated_unused'] as const;
export type Reason = (typeof REASONS)[number];
export type ReasonHours = Partial<Record<Reason, number>>;

export const REASON_COLOR: Record<Reason, string> = {
  idle: '#d99a2b',
  held: '#d9534f',
  phantom: '#9b5bd6',
  stuck: '#e0609f',
  allocated_unused: '#3fa7a7',
};
export const REASON_LABEL: Record<Reason, string> = {
  idle: 'idle',
  held: 'held (memory, no work)',
  phantom: 'phantom (memory, no process)',
  stuck: 'stuck',
  allocated_unused: 'allocated, unused',
};

/* The idle detector's verdicts (docs/idle.md), in the order the header and
   the legend list them; a state the UI does not know is drawn grey. */
export const STATES = [
  'BUSY',
  'BUSY_LOW_OCC',
  'BURSTY',
  'HELD',
  'EMPTY',
  'PHANTOM',
  'STUCK',
  'ALLOCATED_UNUSED',
  'UNKNOWN',
] as const;
export const STATE_COLOR: Record<string, string> = {
  BUSY: '#2e9d5b',
  BUSY_LOW_OCC: '#8db83a',
  BURSTY: '#c9bd3f',
  HELD: REASON_COLOR.held,
  EMPTY: '#56657a',
  PHANTOM: REASON_COLOR.phantom,
  STUCK: REASON_COLOR.stuck,
  ALLOCATED_UNUSED: REASON_COLOR.allocated_unused,
  UNKNOWN: '#7a6a3a',
};
export const OTHER_STATE_COLOR = '#8b94a3';

export function stateColor(s: string): string {
  return STATE_COLOR[s] ?? OTHER_STATE_COLOR;
}

export const BYS = ['user', 'namespace', 'job', 'pod', 'app', 'host', 'gpu'] as const;
export type WasteBy = (typeof BYS)[number];

export interface WasteRow {
  key: string;
  busy_gpu_h: number;
  wasted_gpu_h: number;
  cost: number | null;
  by_reason?: ReasonHours;
}

export interface StripSeg {
  from: Int;
  to: Int;
  state: string;
}

export interface WasteGpu {
  host: string;
  dev: number;
  uuid?: string;
  model?: string;
  strip: StripSeg[];
}

export interface WasteAnswer {
  by: string;
  from: Int;
  to: Int;
  step_s: number;
  currency: string;
  simulated: boolean;
  now: { gpus_by_state: Record<string, number>; waste_rate: number };
  totals: { busy_gpu_h: number; wasted_gpu_h: number; cost: number | null; by_reason: ReasonHours };
  top: WasteRow[];
  series: { t: Int; by_reason: ReasonHours }[];
  gpus: WasteGpu[];
}

/* ---- time range --------------------------------------------------------- */

/* The range picker's choices (as the Sessions list's, less "any time":
   waste is counted over a range) and the chart step for each: about 60 to
   120 bars. */
export const RANGES: { label: string; s: number; step: number }[] = [
  { label: 'last hour', s: 3600, step: 60 },
  { label: 'last 6 h', s: 6 * 3600, step: 300 },
  { label: 'last 24 h', s: 86400, step: 900 },
  { label: 'last 7 days', s: 7 * 86400, step: 7200 },
  { label: 'last 30 days', s: 30 * 86400, step: 6 * 3600 },
];

/* from/to (epoch ns, decimal strings) and step of the last `s` seconds
   before nowMs; to is rounded down to the step so that two loads a few
   seconds apart ask for the same buckets. */
export function rangeOf(s: number, step: number, nowMs: number): { from: string; to: string; step: number } {
  const stepNs = BigInt(step) * 1000000000n;
  const to = ((BigInt(Math.floor(nowMs)) * 1000000n) / stepNs + 1n) * stepNs;
  const from = to - BigInt(s) * 1000000000n;
  return { from: from.toString(), to: to.toString(), step };
}

/* ---- formats ------------------------------------------------------------ */

/* GPU-hours: 2 decimals below 1, 1 below 100, whole above (with
   thousands separators); "<0.01" for a little that is not nothing. */
export function fmtGpuH(h: number | null | undefined): string {
  if (h === null || h === undefined || !isFinite(h)) return '-';
  const a = Math.abs(h);
  let v: string;
  if (a === 0) v = '0';
  else if (a < 0.005) v = (h < 0 ? '>-' : '<') + '0.01';
  else if (a < 1) v = h.toFixed(2);
  else if (a < 100) v = h.toFixed(1);
  else v = Math.round(h).toLocaleString('en-US');
  return v + ' GPU·h';
}

/* Money in the answer's currency; null (no price configured) is "-". */
export function fmtCost(c: number | null | undefined, currency: string): string {
  if (c === null || c === undefined || !isFinite(c)) return '-';
  const digits = Math.abs(c) >= 1000 ? 0 : 2;
  try {
    return new Intl.NumberFormat('en-US', {
      style: 'currency',
      currency: currency || 'USD',
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(c);
  } catch {
    // not an ISO 4217 code (the server's --currency is free text): the number and the code
    return c.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) + ' ' + currency;
  }
}

/* The waste rate (wasted GPU-seconds per second: how many GPUs are wasted
   right now, on average over the last 5 minutes). */
export function fmtRate(r: number | null | undefined): string {
  if (r === null || r === undefined || !isFinite(r)) return '-';
  return r.toFixed(r < 10 ? 2 : 1) + (r === 1 ? ' GPU' : ' GPUs');
}

/* The wasted share of the GPU-hours seen (null when none were). */
export function wasteShare(busy: number, wasted: number): number | null {
  const all = busy + wasted;
  return all > 0 ? wasted / all : null;
}

/* ---- header ------------------------------------------------------------- */

/* gpus_by_state in the legend's order, then the states the UI does not
   know (by name), zero counts left out; and the total. */
export function statesSummary(by: Record<string, number>): { items: [string, number][]; total: number } {
  const known = STATES.filter((s) => by[s] > 0).map((s): [string, number] => [s, by[s]]);
  const rest = Object.keys(by)
    .filter((s) => !(STATES as readonly string[]).includes(s) && by[s] > 0)
    .sort()
    .map((s): [string, number] => [s, by[s]]);
  const items = [...known, ...rest];
  return { items, total: items.reduce((a, [, n]) => a + n, 0) };
}

/* Nothing to show: no GPU seen, nothing counted, no bucket. */
export function isEmptyWaste(a: WasteAnswer): boolean {
  const states = Object.values(a.now?.gpus_by_state ?? {}).reduce((x, n) => x + n, 0);
  return (
    !a.gpus?.length &&
    !a.top?.length &&
    !(a.series ?? []).some((p) => reasonSum(p.by_reason) > 0) &&
    !(a.totals?.busy_gpu_h > 0) &&
    !(a.totals?.wasted_gpu_h > 0) &&
    states === 0
  );
}

export function reasonSum(r: ReasonHours | undefined): number {
  if (!r) return 0;
  return REASONS.reduce((a, k) => a + (r[k] ?? 0), 0);
}

/* ---- waste over time ---------------------------------------------------- */

export interface StackRect {
  x: number;
  y: number;
  w: number;
  h: number;
  reason: Reason;
  value: number; // GPU-hours of this reason in the bucket
  t: string; // the bucket's start, epoch ns
}

export interface StackChart {
  yMax: number; // the axis' top, GPU-hours per bucket
  rects: StackRect[];
  buckets: { t: string; x: number; w: number; total: number }[];
  ticks: { y: number; v: number }[];
}

/* The series as stacked bars on a w × h plot (y grows down): one bar per
   bucket from t to t + step (cut at the range), the reasons stacked in
   REASONS order; buckets outside the range and zero parts are left out.
   Buckets the answer repeats are summed. */
export function stackChart(
  series: WasteAnswer['series'],
  from: Int,
  to: Int,
  stepS: number,
  w: number,
  h: number,
): StackChart {
  const f = big(from);
  const t1 = big(to);
  const span = Number(t1 - f);
  const stepNs = BigInt(Math.max(1, Math.round(stepS))) * 1000000000n;
  const byT = new Map<string, ReasonHours>();
  for (const p of series ?? []) {
    const t = big(p.t);
    if (t >= t1 || t + stepNs <= f) continue;
    const k = t.toString();
    const acc = byT.get(k) ?? {};
    for (const r of REASONS) if (p.by_reason?.[r]) acc[r] = (acc[r] ?? 0) + (p.by_reason[r] ?? 0);
    byT.set(k, acc);
  }
  const keys = [...byT.keys()].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  const totals = keys.map((k) => reasonSum(byT.get(k)));
  const yMax = niceCeil(Math.max(0, ...totals)) || 1;
  const xOf = (t: bigint) => (span > 0 ? (Number((t < f ? f : t > t1 ? t1 : t) - f) / span) * w : 0);
  const rects: StackRect[] = [];
  const buckets: StackChart['buckets'] = [];
  keys.forEach((k, i) => {
    const t = BigInt(k);
    const x0 = xOf(t);
    const x1 = xOf(t + stepNs);
    buckets.push({ t: k, x: x0, w: x1 - x0, total: totals[i] });
    let acc = 0;
    const r = byT.get(k)!;
    for (const reason of REASONS) {
      const v = r[reason] ?? 0;
      if (!(v > 0)) continue;
      const yTop = h - ((acc + v) / yMax) * h;
      const yBot = h - (acc / yMax) * h;
      rects.push({ x: x0, y: yTop, w: x1 - x0, h: yBot - yTop, reason, value: v, t: k });
      acc += v;
    }
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((q) => ({ y: h - q * h, v: yMax * q }));
  return { yMax, rects, buckets, ticks };
}

/* Labels for the time axis: n + 1 evenly spaced times (UTC, as fmtWall),
   the date shown when the range spans more than a day. */
export function timeTicks(from: Int, to: Int, w: number, n = 6): { x: number; label: string }[] {
  const f = big(from);
  const span = big(to) - f;
  if (span <= 0n) return [];
  const long = span > 86400n * 1000000000n;
  const out: { x: number; label: string }[] = [];
  for (let i = 0; i <= n; i++) {
    const t = f + (span * BigInt(i)) / BigInt(n);
    const iso = new Date(Number(t / 1000000n)).toISOString(); // 2026-12-01T21:17:00.000Z
    out.push({ x: (i / n) * w, label: long ? iso.slice(5, 10) + ' ' + iso.slice(11, 16) : iso.slice(11, 16) });
  }
  return out;
}

/* ---- per-GPU verdict strip ---------------------------------------------- */

export interface StripPx {
  x: number; // first pixel
  w: number; // pixels (at least 1)
  state: string;
  from: string; // the (merged) segment's time range, epoch ns
  to: string;
}

/* A GPU's verdict history on a w-pixel strip: segments cut to the range,
   in time order, on whole pixels (each from its rounded start to its
   rounded end, never before the end of the one drawn before it). A segment
   left with no pixel is dropped, unless it is a waste state and the one
   before is not: then it takes that one's last pixel (a 2-minute STUCK in
   30 days must show). Touching segments of one state are merged. Time with
   no segment stays empty (no verdict seen: the detector was not running). */
export function stripLayout(strip: StripSeg[], from: Int, to: Int, w: number): StripPx[] {
  const f = big(from);
  const t1 = big(to);
  const span = Number(t1 - f);
  if (!(span > 0) || !(w > 0)) return [];
  const segs = (strip ?? [])
    .map((s) => ({ a: big(s.from), b: big(s.to), state: s.state }))
    .filter((s) => s.b > f && s.a < t1 && s.b > s.a)
    .map((s) => ({ a: s.a < f ? f : s.a, b: s.b > t1 ? t1 : s.b, state: s.state }))
    .sort((x, y) => (x.a < y.a ? -1 : x.a > y.a ? 1 : 0));
  const px = (t: bigint) => Math.round((Number(t - f) / span) * w);
  const out: StripPx[] = [];
  for (const s of segs) {
    let x0 = Math.min(px(s.a), w - 1);
    let x1 = Math.min(Math.max(px(s.b), x0 + 1), w);
    const prev = out[out.length - 1];
    if (prev && x0 < prev.x + prev.w) x0 = prev.x + prev.w;
    if (x0 >= x1) {
      // no pixel left: a waste state takes the last pixel of a busy one
      if (!prev || !isWasteState(s.state) || isWasteState(prev.state)) continue;
      const end = prev.x + prev.w;
      prev.w -= 1;
      if (prev.w === 0) out.pop();
      x0 = end - 1;
      x1 = end;
    }
    const last = out[out.length - 1];
    if (last && last.state === s.state && last.x + last.w === x0) {
      last.w = x1 - last.x;
      last.to = s.b.toString();
    } else out.push({ x: x0, w: x1 - x0, state: s.state, from: s.a.toString(), to: s.b.toString() });
  }
  return out;
}

/* The verdicts of a GPU nobody is using well (the waste reasons' states):
   on a strip they win a contested pixel from a busy state. */
export function isWasteState(s: string): boolean {
  return s === 'HELD' || s === 'EMPTY' || s === 'PHANTOM' || s === 'STUCK' || s === 'ALLOCATED_UNUSED';
}

/* The states a set of GPUs' strips use, in legend order, for the legend. */
export function stripStates(gpus: WasteGpu[]): string[] {
  const seen = new Set<string>();
  for (const g of gpus) for (const s of g.strip ?? []) seen.add(s.state);
  return [...STATES.filter((s) => seen.has(s)), ...[...seen].filter((s) => !STATE_COLOR[s]).sort()];
}

/* ---- top wasters -------------------------------------------------------- */

export type TopKey = 'key' | 'busy' | 'wasted' | 'cost' | 'share' | Reason;

export function topValue(r: WasteRow, k: TopKey): number | string | null {
  switch (k) {
    case 'key':
      return r.key;
    case 'busy':
      return r.busy_gpu_h;
    case 'wasted':
      return r.wasted_gpu_h;
    case 'cost':
      return r.cost;
    case 'share':
      return wasteShare(r.busy_gpu_h, r.wasted_gpu_h);
    default:
      return r.by_reason?.[k] ?? 0;
  }
}

/* The rows sorted by k (desc: largest first); a missing value (no price,
   no GPU-hours) goes last either way; ties by key, so the order is stable. */
export function sortTop(rows: WasteRow[], k: TopKey, desc: boolean): WasteRow[] {
  return rows.slice().sort((a, b) => {
    const x = topValue(a, k);
    const y = topValue(b, k);
    if (x === null && y !== null) return 1;
    if (y === null && x !== null) return -1;
    let c = 0;
    if (x !== null && y !== null) c = x < y ? -1 : x > y ? 1 : 0;
    if (desc) c = -c;
    return c || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  });
}

/* An owner's key as shown: the API's "" is the owner nobody named (e.g.
   leaked memory with no holder), "(other)" the owners past its cap. */
export function ownerLabel(key: string): string {
  return key === '' ? '(not named)' : key;
}

/* ---- drill-down --------------------------------------------------------- */

/* Where a top-waster row leads: a job to the Jobs page, a host to its
   sessions (the list's search matches hosts); the others have no page. */
export function topHref(by: string, key: string): string | null {
  if (key === '' || key === '(other)') return null;
  if (by === 'job') return formatHash({ tab: 'jobs', job: key });
  if (by === 'host') return formatHash({ tab: 'sessions', q: key });
  return null;
}

/* ns a GPU spent in waste states within the range. */
export function gpuWasteNs(g: WasteGpu, from: Int, to: Int): bigint {
  const f = big(from);
  const t1 = big(to);
  let n = 0n;
  for (const s of g.strip ?? []) {
    if (!isWasteState(s.state)) continue;
    const a = big(s.from) < f ? f : big(s.from);
    const b = big(s.to) > t1 ? t1 : big(s.to);
    if (b > a) n += b - a;
  }
  return n;
}

/* The GPUs most wasted first (time in waste states in the range), then by
   host and device. */
export function sortGpus(gpus: WasteGpu[], from: Int, to: Int): WasteGpu[] {
  const w = new Map(gpus.map((g) => [g, gpuWasteNs(g, from, to)]));
  return gpus.slice().sort((a, b) => {
    const x = w.get(a)!;
    const y = w.get(b)!;
    if (x !== y) return x > y ? -1 : 1;
    return a.host < b.host ? -1 : a.host > b.host ? 1 : a.dev - b.dev;
  });
}

/* The GPU of the answer's strips a by=gpu key names (its UUID, else
   host:index, docs/api.md "GPU waste"), or null. */
export function gpuOfKey(gpus: WasteGpu[], key: string): WasteGpu | null {
  return (gpus ?? []).find((g) => (g.uuid ? g.uuid === key : g.host + ':' + g.dev === key)) ?? null;
}
