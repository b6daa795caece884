// area.ts - the figures of a selected time range (views/AreaPanel.tsx):
// kernels by name and by lane, copies by lane.  Offsets are ns from the
// session's first event.
import { num } from './api';
import type { TimelineTileAnswer } from './tiles';
import type { CopyItem } from './types';

export interface AreaKernel {
  kid: number;
  lane: string;
  t: number;
  dur: number;
  name: string;
}

/* The exact kernels of one or more timeline answers (windows of the range;
   a kernel running across two windows is listed by both: kept once). */
export function areaKernels(parts: TimelineTileAnswer[], base: bigint): AreaKernel[] {
  const seen = new Set<number>();
  const out: AreaKernel[] = [];
  for (const p of parts)
    for (const l of p.lanes)
      for (const k of l.kernels ?? []) {
        if (seen.has(k[0])) continue;
        seen.add(k[0]);
        out.push({
          kid: k[0],
          lane: 'k' + l.dev + ':' + l.stream,
          t: Number(BigInt(k[1]) - base),
          dur: num(k[2]),
          name: p.names[String(k[3])] ?? String(k[3]),
        });
      }
  return out;
}

export interface AreaAgg {
  count: number;
  total: number;
  self: number;
  names: { name: string; count: number; total: number; self: number }[];
  lanes: { key: string; count: number; busy: number }[];
}

/* By name: kernels that occupy [t0, t1); total = their whole durations,
   self = the part of each inside the range.  By lane: count and the time
   inside the range (busy). */
export function aggregateArea(ks: AreaKernel[], t0: number, t1: number): AreaAgg {
  const byName = new Map<string, { name: string; count: number; total: number; self: number }>();
  const byLane = new Map<string, { key: string; count: number; busy: number }>();
  let count = 0;
  let total = 0;
  let self = 0;
  for (const k of ks) {
    const e = k.t + k.dur;
    if (!(k.t < t1 && (e > t0 || (k.dur === 0 && k.t >= t0)))) continue;
    const inside = Math.max(0, Math.min(e, t1) - Math.max(k.t, t0));
    let n = byName.get(k.name);
    if (!n) byName.set(k.name, (n = { name: k.name, count: 0, total: 0, self: 0 }));
    n.count++;
    n.total += k.dur;
    n.self += inside;
    let l = byLane.get(k.lane);
    if (!l) byLane.set(k.lane, (l = { key: k.lane, count: 0, busy: 0 }));
    l.count++;
    l.busy += inside;
    count++;
    total += k.dur;
    self += inside;
  }
  const lanes = [...byLane.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
  return { count, total, self, names: [...byName.values()], lanes };
}

export interface CopyAgg {
  lane: string;
  count: number;
  bytes: number;
  dur: number;
}

/* Copies, memsets and syncs of the selected copy lanes (c<dev>:<kind>). */
export function aggregateCopies(rows: CopyItem[], lanes: Set<string>): CopyAgg[] {
  const m = new Map<string, CopyAgg>();
  for (const c of rows) {
    if (c.type === 'alloc' || c.type === 'free') continue;
    const kind = c.type === 'memcpy' ? 'memcpy ' + (c.kind ?? '?') : c.type;
    const key = 'c' + c.dev + ':' + kind;
    if (!lanes.has(key)) continue;
    let a = m.get(key);
    if (!a) m.set(key, (a = { lane: 'GPU' + c.dev + ' ' + kind, count: 0, bytes: 0, dur: 0 }));
    a.count++;
    a.bytes += num(c.bytes);
    a.dur += num(c.dur);
  }
  return [...m.values()].sort((a, b) => (a.lane < b.lane ? -1 : 1));
}
