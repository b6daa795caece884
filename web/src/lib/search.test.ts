import { describe, expect, it } from 'vitest';
import { density, hitsIn, strata, Stratum } from './search';

describe('search strata', () => {
  it('cuts a range into equal integer strata', () => {
    expect(strata(0, 100, 4)).toEqual([
      [0, 25],
      [25, 50],
      [50, 75],
      [75, 100],
    ]);
    expect(strata(0, 3, 10).length).toBe(3);
  });
  const st: Stratum[] = [
    { a: 0, b: 100, n: 2, more: false, at: [10, 60] },
    { a: 100, b: 200, n: 3, more: true, at: [120, 121, 150] },
    { a: 200, b: 300, n: 0, more: false, at: [] },
  ];
  it('counts hits in a range, exactly where every stratum was', () => {
    expect(hitsIn(st, 0, 100)).toEqual({ n: 2, exact: true });
    expect(hitsIn(st, 0, 300)).toEqual({ n: 5, exact: false });
    expect(hitsIn(st, 50, 130)).toEqual({ n: 3, exact: false });
    expect(hitsIn(st, 200, 300)).toEqual({ n: 0, exact: true });
  });
  it('marks hits per column, and a dense stratum over its width', () => {
    const d = density(st, 0, 300, 30);
    expect(d[1]).toBe(1);
    expect(d[6]).toBe(1);
    expect(d[0]).toBe(0);
    expect(d[12]).toBe(2); // 120 and 121, seen
    expect(d[15]).toBe(1);
    expect(d[18]).toBe(-1); // dense, none seen
    expect(d[25]).toBe(0);
  });
});
