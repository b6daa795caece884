// compare.ts - GET /compare's rows (docs/api.md) for the compare view:
// totals and deltas to sort by, and the rows whose display name is shared
// by another row (template instantiations demangled alike, or names cut by
// the client) told apart by their recorded (mangled) name.
import { num } from './api';
import type { CompareItem } from './types';

export interface CmpRow {
  key: string; // the recorded name: the row's identity
  name: string;
  mangled: string | null;
  alike: number; // rows showing this name (more than 1: instantiations alike)
  aCount: number | null;
  aAvg: number | null;
  aTotal: number | null;
  bCount: number | null;
  bAvg: number | null;
  bTotal: number | null;
  dTotal: number; // B total - A total, ns (a missing side counts 0)
  dAvgPct: number | null; // the server's avg_change_pct
  dCount: number; // B count - A count
}

export function compareRows(items: CompareItem[]): CmpRow[] {
  const seen = new Map<string, number>();
  for (const it of items) seen.set(it.name, (seen.get(it.name) ?? 0) + 1);
  return items.map((it) => {
    const aT = it.a ? num(it.a.total_ns) : null;
    const bT = it.b ? num(it.b.total_ns) : null;
    return {
      key: it.mangled ?? it.name,
      name: it.name,
      mangled: it.mangled ?? null,
      alike: seen.get(it.name) ?? 1,
      aCount: it.a ? it.a.count : null,
      aAvg: it.a ? num(it.a.avg_ns) : null,
      aTotal: aT,
      bCount: it.b ? it.b.count : null,
      bAvg: it.b ? num(it.b.avg_ns) : null,
      bTotal: bT,
      dTotal: (bT ?? 0) - (aT ?? 0),
      dAvgPct: it.avg_change_pct ?? null,
      dCount: (it.b?.count ?? 0) - (it.a?.count ?? 0),
    };
  });
}

/* A row's value for sorting by column k; a missing value sorts lowest. */
export function cmpKey(r: CmpRow, k: string): number | string {
  if (k === 'name') return r.name + '\u0000' + r.key;
  const v = r[k as keyof CmpRow];
  return typeof v === 'number' ? v : -Infinity;
}

export interface CmpTotals {
  aTotal: number;
  bTotal: number;
  dTotal: number;
  dPct: number | null;
  aCount: number;
  bCount: number;
}

export function compareTotals(rows: CmpRow[]): CmpTotals {
  let aTotal = 0;
  let bTotal = 0;
  let aCount = 0;
  let bCount = 0;
  for (const r of rows) {
    aTotal += r.aTotal ?? 0;
    bTotal += r.bTotal ?? 0;
    aCount += r.aCount ?? 0;
    bCount += r.bCount ?? 0;
  }
  return {
    aTotal,
    bTotal,
    dTotal: bTotal - aTotal,
    dPct: aTotal ? ((bTotal - aTotal) / aTotal) * 100 : null,
    aCount,
    bCount,
  };
}
