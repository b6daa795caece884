// series.ts - the system endpoint's buckets as uPlot data: one shared x
// (seconds from the session start) and one y array per (source, field),
// null where a source has no bucket at that x.
import type { Dec, Int } from './api';

/* One bucket: t, n, and per field [min, max, avg] (docs/api.md). */
export interface SysPoint {
  t: Dec; // epoch ns, a decimal string (docs/api.md "Numbers")
  n: number;
  [field: string]: Int | number[];
}
export interface SysSeries {
  src: string;
  dev?: number;
  points: SysPoint[];
}

export interface Family {
  id: string;
  title: string;
  unit: string;
  fields: string[];
  scale?: number; // multiply values
}

export const FAMILIES: Family[] = [
  { id: 'util', title: 'GPU utilisation', unit: '%', fields: ['util', 'mem_util'] },
  { id: 'sm', title: 'SM activity / occupancy', unit: '%', fields: ['sm_active', 'sm_occ'], scale: 100 },
  { id: 'vram', title: 'VRAM used', unit: 'GiB', fields: ['mem_used'], scale: 1 / 1073741824 },
  { id: 'temp', title: 'Temperature', unit: '°C', fields: ['temp'] },
  { id: 'power', title: 'Power', unit: 'W', fields: ['power'], scale: 1 / 1000 },
  { id: 'fan', title: 'Fan', unit: '%', fields: ['fan'] },
  { id: 'clk', title: 'Clocks', unit: 'MHz', fields: ['clk_sm', 'clk_mem'] },
  { id: 'pcie', title: 'PCIe throughput', unit: 'KB/s', fields: ['pcie_tx', 'pcie_rx'] },
  { id: 'cpu', title: 'Host CPU', unit: '%', fields: ['cpu', 'proc_cpu'] },
  { id: 'ram', title: 'Host RAM used', unit: 'GiB', fields: ['ram_used', 'proc_rss'], scale: 1 / 1073741824 },
];

export function align(
  series: SysSeries[],
  fam: Family,
  base: bigint,
  srcs: Set<string> | null,
): { labels: string[]; data: (number | null)[][] } {
  const xs = new Set<number>();
  const cols: { label: string; m: Map<number, number> }[] = [];
  for (const s of series) {
    if (srcs && !srcs.has(s.src)) continue;
    for (const f of fam.fields) {
      const m = new Map<number, number>();
      for (const p of s.points) {
        const v = p[f];
        if (!Array.isArray(v)) continue;
        const x = Number(BigInt(p.t) - base) / 1e9;
        xs.add(x);
        m.set(x, Number(v[2]) * (fam.scale ?? 1));
      }
      if (m.size) cols.push({ label: s.src + ' ' + f, m });
    }
  }
  const x = [...xs].sort((a, b) => a - b);
  return {
    labels: cols.map((c) => c.label),
    data: [x, ...cols.map((c) => x.map((t) => (c.m.has(t) ? c.m.get(t)! : null)))],
  };
}
