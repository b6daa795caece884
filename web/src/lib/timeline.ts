// timeline.ts - data shaping for the kernel timeline: lanes, the server's
// timeline summary (buckets) and raw kernels as time items, the viewport
// transform, and the draw list (one rect per lane per pixel column at most).
//
// All times here are ns offsets (Numbers) from the session's base time; the
// absolute epoch-ns values stay bigint/strings elsewhere (api.ts).
import { Dec, num } from './api';

export type LaneKind = 'kernel' | 'copy' | 'scope';

export interface Lane {
  key: string;
  kind: LaneKind;
  dev: number;
  stream: number; // kernel lanes: the stream; copy lanes: 0
  label: string;
  y: number;
  h: number;
}

/* One thing drawn on a lane: a bucket (count > 1 or summary) or a kernel. */
export interface Item {
  lane: string;
  t: number; // start offset, ns
  dur: number; // ns
  count: number; // kernels in it (1 for a raw kernel)
  busy: number; // busy ns in it
  name: number | string; // name id (summary) or name (raw)
  id?: number; // kernel id (raw items only)
}

export interface View {
  t0: number;
  t1: number;
}

export const LANE_H = 22;
export const SCOPE_H = 18;

export const kLane = (dev: number, stream: number) => 'k' + dev + ':' + stream;
export const cLane = (dev: number, kind: string) => 'c' + dev + ':' + kind;
export const SCOPE_LANE = 'scope';

/* Lanes in display order: the scope lane, then per device its kernel lanes
   by stream and its copy lanes by kind. */
export function layoutLanes(
  kernelLanes: { dev: number; stream: number }[],
  copyLanes: { dev: number; kind: string }[],
  top = 0,
  scope = true,
): Lane[] {
  const out: Lane[] = [];
  let y = top;
  if (scope) {
    out.push({ key: SCOPE_LANE, kind: 'scope', dev: -1, stream: 0, label: 'scopes', y, h: SCOPE_H });
    y += SCOPE_H + 2;
  }
  const devs = new Set<number>();
  kernelLanes.forEach((l) => devs.add(l.dev));
  copyLanes.forEach((l) => devs.add(l.dev));
  const seen = new Set<string>();
  for (const d of [...devs].sort((a, b) => a - b)) {
    const ks = kernelLanes.filter((l) => l.dev === d).sort((a, b) => a.stream - b.stream);
    for (const l of ks) {
      const key = kLane(l.dev, l.stream);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({
        key,
        kind: 'kernel',
        dev: d,
        stream: l.stream,
        label: 'GPU' + d + ' stream ' + l.stream,
        y,
        h: LANE_H,
      });
      y += LANE_H + 2;
    }
    const cs = copyLanes.filter((l) => l.dev === d).sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
    for (const l of cs) {
      const key = cLane(l.dev, l.kind);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ key, kind: 'copy', dev: d, stream: 0, label: 'GPU' + d + ' ' + l.kind, y, h: LANE_H });
      y += LANE_H + 2;
    }
  }
  return out;
}

export interface Summary {
  from: number; // offsets
  to: number;
  width: number;
  bucket_ns: number;
  /* per pixel [pixel, kernels started, busy ns (a decimal string, as the
     API sends it), top kernel name id] */
  lanes: { dev: number; stream: number; buckets: [number, number, Dec | number, number][] }[];
}

/* The server's buckets as items: pixel p covers [from + p*px, from + (p+1)*px). */
export function summaryItems(s: Summary): Item[] {
  const px = (s.to - s.from) / s.width;
  const out: Item[] = [];
  for (const l of s.lanes) {
    const key = kLane(l.dev, l.stream);
    for (const [p, count, busy, name] of l.buckets)
      out.push({ lane: key, t: s.from + p * px, dur: px, count, busy: num(busy), name });
  }
  return out;
}

/* Kernels the summary says start inside [t0, t1). */
export function countInView(items: Item[], v: View): number {
  let n = 0;
  for (const it of items) if (it.t + it.dur > v.t0 && it.t < v.t1) n += it.count;
  return n;
}

export function xOf(t: number, v: View, width: number): number {
  return ((t - v.t0) / (v.t1 - v.t0)) * width;
}

export function tOf(x: number, v: View, width: number): number {
  return v.t0 + (x / width) * (v.t1 - v.t0);
}

export interface Rect {
  lane: string;
  x: number;
  w: number;
  shade: number; // 0..1: busy share of the column (buckets) or 1 (kernel)
  item: Item; // the widest item merged into it
  label: boolean;
}

/* The draw list: items clipped to the canvas, merged so that each lane gets
   at most one rect per pixel column (many tiny items in one column become
   one rect whose shade is their busy share).  Labels only for rects >= 40 px. */
export function drawList(items: Item[], v: View, width: number): Rect[] {
  const byLane = new Map<string, Item[]>();
  for (const it of items) {
    if (it.t + it.dur <= v.t0 || it.t >= v.t1) continue;
    let a = byLane.get(it.lane);
    if (!a) byLane.set(it.lane, (a = []));
    a.push(it);
  }
  const nsPerPx = (v.t1 - v.t0) / width;
  const out: Rect[] = [];
  for (const [lane, arr] of byLane) {
    arr.sort((a, b) => a.t - b.t);
    let cur: Rect | null = null;
    let curBusy = 0;
    for (const it of arr) {
      let x0 = xOf(it.t, v, width);
      let x1 = xOf(it.t + it.dur, v, width);
      if (x0 < 0) x0 = 0;
      if (x1 > width) x1 = width;
      if (x1 - x0 >= 1) {
        if (cur) out.push(finish(cur, curBusy, nsPerPx));
        cur = null;
        out.push({
          lane,
          x: x0,
          w: x1 - x0,
          shade: it.count > 1 || it.busy < it.dur ? Math.max(0.25, Math.min(1, it.busy / Math.max(1, it.dur))) : 1,
          item: it,
          label: x1 - x0 >= 40,
        });
        continue;
      }
      const col = Math.floor(x0);
      if (cur && col <= cur.x + cur.w - 1) {
        curBusy += it.busy;
        if (it.busy > cur.item.busy) cur.item = it;
        continue;
      }
      if (cur) out.push(finish(cur, curBusy, nsPerPx));
      cur = { lane, x: col, w: 1, shade: 0, item: it, label: false };
      curBusy = it.busy;
    }
    if (cur) out.push(finish(cur, curBusy, nsPerPx));
  }
  return out;
}

function finish(r: Rect, busy: number, nsPerPx: number): Rect {
  r.shade = Math.max(0.25, Math.min(1, busy / Math.max(1, nsPerPx * r.w)));
  return r;
}

/* The item under pixel x of a lane (widest rect first), with a 2 px slop. */
export function pick(rects: Rect[], lane: string, x: number): Rect | null {
  let best: Rect | null = null;
  for (const r of rects) {
    if (r.lane !== lane) continue;
    if (x >= r.x - 2 && x <= r.x + r.w + 2) {
      if (!best || r.w > best.w) best = r;
    }
  }
  return best;
}

/* Zoom by factor (>1 zooms out) around the time at fraction a (0..1) of the
   view; never narrower than 1 µs nor outside [lo, hi] when it fits. */
export function zoom(v: View, factor: number, a: number, lo: number, hi: number): View {
  const span = v.t1 - v.t0;
  let ns = Math.max(1000, span * factor);
  if (ns > hi - lo) ns = hi - lo;
  const anchor = v.t0 + a * span;
  const t0 = anchor - a * ns;
  return clampView({ t0, t1: t0 + ns }, lo, hi);
}

export function pan(v: View, dxFrac: number, lo: number, hi: number): View {
  const d = (v.t1 - v.t0) * dxFrac;
  return clampView({ t0: v.t0 + d, t1: v.t1 + d }, lo, hi);
}

export function clampView(v: View, lo: number, hi: number): View {
  const span = v.t1 - v.t0;
  if (span >= hi - lo) return { t0: lo, t1: hi };
  if (v.t0 < lo) return { t0: lo, t1: lo + span };
  if (v.t1 > hi) return { t0: hi - span, t1: hi };
  return v;
}

/* Scope lane items from raw kernels: each scope instance spans its kernels. */
export function scopeItems(kernels: { scope: number; t: number; dur: number }[]): Item[] {
  const m = new Map<number, Item>();
  for (const k of kernels) {
    if (!k.scope) continue;
    const e = m.get(k.scope);
    if (!e) {
      m.set(k.scope, {
        lane: SCOPE_LANE,
        t: k.t,
        dur: k.dur,
        count: 1,
        busy: k.dur,
        name: 'scope ' + k.scope,
        id: k.scope,
      });
    } else {
      const end = Math.max(e.t + e.dur, k.t + k.dur);
      e.t = Math.min(e.t, k.t);
      e.dur = end - e.t;
      e.count++;
      e.busy += k.dur;
    }
  }
  return [...m.values()].map((e) => ({ ...e, busy: e.dur }));
}

/* Tick marks for the time axis: a 1-2-5 step giving ~ width/100 ticks. */
export function ticks(v: View, width: number): number[] {
  const span = v.t1 - v.t0;
  const target = span / Math.max(1, width / 110);
  const p = Math.pow(10, Math.floor(Math.log10(target)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= target) ?? 10 * p;
  const out: number[] = [];
  for (let t = Math.ceil(v.t0 / step) * step; t <= v.t1; t += step) out.push(t);
  return out;
}
