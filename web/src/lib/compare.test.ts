import { describe, expect, it } from 'vitest';
import { cmpKey, compareRows, compareTotals } from './compare';
import { sortRows } from '../views/common';
import type { CompareAgg, CompareItem } from './types';

const agg = (count: number, total: number): CompareAgg => ({
  count,
  total_ns: String(total),
  avg_ns: String(Math.round(total / count)),
  p50_ns: '0',
  max_ns: '0',
});
const items: CompareItem[] = [
  { name: 'void k<int>(int*)', mangled: '_Z1kIiEvPT_', a: agg(10, 1000), b: agg(10, 1500), avg_change_pct: 50 },
  { name: 'void k<int>(int*)', mangled: '_Z1kIiEvPT_x', a: agg(4, 400), b: agg(4, 200), avg_change_pct: -50 },
  { name: 'gemm', mangled: 'gemm', a: agg(2, 5000), b: null, avg_change_pct: null },
  { name: 'newk', a: null, b: agg(1, 10), avg_change_pct: null },
];

describe('compare', () => {
  it('keys rows by the recorded name and marks display names shared by several rows', () => {
    const r = compareRows(items);
    expect(r.map((x) => x.key)).toEqual(['_Z1kIiEvPT_', '_Z1kIiEvPT_x', 'gemm', 'newk']);
    expect(r.map((x) => x.alike)).toEqual([2, 2, 1, 1]);
    expect(new Set(r.map((x) => x.key)).size).toBe(4);
  });
  it('computes deltas with a missing side as zero', () => {
    const r = compareRows(items);
    expect(r.map((x) => x.dTotal)).toEqual([500, -200, -5000, 10]);
    expect(r.map((x) => x.dCount)).toEqual([0, 0, -2, 1]);
  });
  it('sorts by any column, missing values lowest', () => {
    const r = compareRows(items);
    expect(sortRows(r, 'dTotal', true, cmpKey).map((x) => x.key)).toEqual([
      '_Z1kIiEvPT_',
      'newk',
      '_Z1kIiEvPT_x',
      'gemm',
    ]);
    expect(sortRows(r, 'bTotal', true, cmpKey).map((x) => x.key)).toEqual([
      '_Z1kIiEvPT_',
      '_Z1kIiEvPT_x',
      'newk',
      'gemm',
    ]);
    expect(sortRows(r, 'name', false, cmpKey)[0].key).toBe('gemm');
  });
  it('sums totals', () => {
    const t = compareTotals(compareRows(items));
    expect(t).toEqual({
      aTotal: 6400,
      bTotal: 1710,
      dTotal: -4690,
      dPct: (-4690 / 6400) * 100,
      aCount: 16,
      bCount: 15,
    });
  });
});
