import { describe, expect, it } from 'vitest';
import { gapsText } from './gaps';

describe('gapsText', () => {
  it('says nothing when nothing is missing', () => {
    expect(
      gapsText({ missing: 0, gaps: { device: { count: 0, ranges: [], ranges_cut: false, last_seq: 10 } } }),
    ).toBeNull();
    expect(gapsText({})).toBeNull();
  });
  it('counts and lists the ranges per stream, big seqs as strings', () => {
    const g = gapsText({
      missing: '62990',
      gaps: {
        device: { count: 62988, ranges: [[14286, 77273]], ranges_cut: false, last_seq: 90211 },
        scope: {
          count: 2,
          ranges: [
            [17, 17],
            ['9007199254740993', '9007199254740993'],
          ],
          ranges_cut: false,
          last_seq: '9007199254740999',
        },
        system: { count: 0, ranges: [], ranges_cut: false, last_seq: 311 },
      },
    });
    expect(g!.short).toBe('62,990 lines missing');
    expect(g!.detail).toContain('device 62,988 (seq 14286–77273)');
    expect(g!.detail).toContain('scope 2 (seq 17, 9007199254740993)');
    expect(g!.detail).not.toContain('system');
  });
  it('says when the list of ranges was cut', () => {
    const ranges: [number, number][] = [
      [1, 1],
      [3, 3],
      [5, 5],
      [7, 7],
      [9, 9],
      [11, 11],
    ];
    const g = gapsText({ missing: 150, gaps: { device: { count: 150, ranges, ranges_cut: true, last_seq: 400 } } });
    expect(g!.detail).toContain('seq 1, 3, 5, 7, 9, …');
    expect(
      gapsText({ missing: 1, gaps: { device: { count: 1, ranges: [[4, 4]], ranges_cut: false, last_seq: 9 } } })!.short,
    ).toBe('1 line missing');
  });
});
