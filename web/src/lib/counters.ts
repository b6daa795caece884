// counters.ts - counter tracks under the device lanes of the timeline, on
// its time axis: GPU utilisation, SM activity, VRAM used against the
// device's total, power against its limit, PCIe throughput with units that
// follow the value.  From GET .../system (docs/api.md): per source and
// bucket, [min, max, avg] of each field.
import type { Device } from './types';
import type { SysSeries } from './series';

export interface TrackDef {
  id: string;
  label: string;
  fields: string[]; // summed (PCIe: tx + rx)
  unit: string;
}

export const TRACKS: TrackDef[] = [
  { id: 'util', label: 'GPU util', fields: ['util'], unit: '%' },
  { id: 'sm', label: 'SM active', fields: ['sm_active'], unit: '%' },
  { id: 'vram', label: 'VRAM', fields: ['mem_used'], unit: 'B' },
  { id: 'power', label: 'power', fields: ['power'], unit: 'W' },
  { id: 'pcie', label: 'PCIe', fields: ['pcie_tx', 'pcie_rx'], unit: 'B/s' },
];

/* One track's points: offsets (ns), the average, min and max per bucket in
   the track's unit, and the scale's top (the capacity, the limit, or the
   largest value). */
export interface Track {
  dev: number;
  id: string;
  label: string;
  t: Float64Array;
  avg: Float64Array;
  lo: Float64Array;
  hi: Float64Array;
  top: number;
  cap: number | null; // VRAM total, power limit: drawn as a line, said in the label
  hold: number; // ns a point stands for when the next one is further away (a gap after it)
}

type Pt = SysSeries['points'][number];

function field(p: Pt, f: string): number[] | null {
  const v = p[f];
  return Array.isArray(v) ? v.map(Number) : null;
}

/* The tracks of each GPU in the answer, for the ids asked.  A sample
   stands until the next one, up to `hold` ns: two buckets or two sampling
   intervals (GPUFL_SYSTEM_INTERVAL_MS), whichever is longer; past that the
   track shows a gap (no samples), not a value. */
export function shapeTracks(
  series: SysSeries[],
  bucketNs: number,
  base: bigint,
  devices: Device[],
  ids: Set<string>,
  intervalMs = 0,
): Track[] {
  const hold = Math.max(2 * bucketNs, 2 * intervalMs * 1e6);
  const out: Track[] = [];
  for (const s of series) {
    if (!s.src.startsWith('gpu')) continue;
    const dev = s.dev ?? Number(s.src.slice(3));
    const dv = devices.find((d) => d.id === dev);
    for (const def of TRACKS) {
      if (!ids.has(def.id)) continue;
      const pts = s.points.filter((p) => def.fields.some((f) => field(p, f)));
      if (!pts.length) continue;
      const n = pts.length;
      const t = new Float64Array(n);
      const avg = new Float64Array(n);
      const lo = new Float64Array(n);
      const hi = new Float64Array(n);
      let memTotal = 0;
      for (let i = 0; i < n; i++) {
        const p = pts[i];
        t[i] = Number(BigInt(p.t) - base);
        let a = 0;
        let l = 0;
        let h = 0;
        for (const f of def.fields) {
          const v = field(p, f);
          if (!v) continue;
          l += v[0];
          h += v[1];
          a += v[2];
        }
        const k = def.id === 'sm' ? 100 : def.id === 'power' ? 1 / 1000 : def.id === 'pcie' ? 1000 : 1;
        avg[i] = a * k;
        lo[i] = l * k;
        hi[i] = h * k;
        if (def.id === 'vram') {
          const mt = field(p, 'mem_total');
          if (mt) memTotal = Math.max(memTotal, mt[1]);
        }
      }
      let cap: number | null = null;
      let top = 0;
      for (let i = 0; i < n; i++) top = Math.max(top, hi[i]);
      if (def.unit === '%') top = 100;
      if (def.id === 'vram') {
        cap = memTotal || (dv?.mem !== undefined ? Number(dv.mem) : null);
        if (cap) top = Math.max(cap, top);
      }
      if (def.id === 'power' && dv?.power_limit) {
        cap = dv.power_limit / 1000;
        top = Math.max(cap, top);
      }
      if (!(top > 0)) top = 1;
      out.push({ dev, id: def.id, label: def.label, t, avg, lo, hi, top, cap, hold });
    }
  }
  return out;
}

/* The index of the point whose bucket holds t, or -1 (a gap). */
export function pointAt(tr: Track, t: number): number {
  let lo = 0;
  let hi = tr.t.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (tr.t[m] <= t) lo = m + 1;
    else hi = m;
  }
  const i = lo - 1;
  if (i < 0) return -1;
  // a point stands until the next one, for `hold` at most
  const end = i + 1 < tr.t.length ? Math.min(tr.t[i + 1], tr.t[i] + tr.hold) : tr.t[i] + tr.hold;
  return t < end ? i : -1;
}

/* A value in the track's unit, with the unit (auto-scaled for bytes and
   byte rates: B, KB, MB, GB (SI), as NVML reports PCIe in KB/s). */
export function fmtCounter(id: string, v: number): string {
  if (!isFinite(v)) return '-';
  if (id === 'util' || id === 'sm') return v.toFixed(v < 10 ? 1 : 0) + ' %';
  if (id === 'power') return v.toFixed(v < 100 ? 1 : 0) + ' W';
  if (id === 'vram') {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) {
      v /= 1024;
      i++;
    }
    return (i ? v.toFixed(v < 10 ? 2 : 1) : v.toFixed(0)) + ' ' + u[i];
  }
  const u = ['B/s', 'kB/s', 'MB/s', 'GB/s', 'TB/s'];
  let i = 0;
  while (Math.abs(v) >= 1000 && i < u.length - 1) {
    v /= 1000;
    i++;
  }
  return (i ? v.toFixed(v < 10 ? 2 : 1) : v.toFixed(0)) + ' ' + u[i];
}
