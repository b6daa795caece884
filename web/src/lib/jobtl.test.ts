import { describe, expect, it } from 'vitest';
import { clockNote, rankLane, zoomTo } from './jobtl';
import type { TimelineTileAnswer } from './tiles';

const answer = (lanes: [number, number, string, number][][], bucket = '100'): TimelineTileAnswer => ({
  from: '1000',
  to: '2000',
  width: 10,
  bucket_ns: bucket,
  level: 'raw',
  lanes: lanes.map((b, i) => ({ dev: 0, stream: 7 + i, buckets: b })),
  names: {},
});

describe('job timeline', () => {
  it('folds every stream of a rank into its lane, column by column', () => {
    const l = rankLane(
      answer([
        [
          [0, 2, '50', 1],
          [3, 1, '100', 2],
        ],
        [
          [3, 1, '80', 4],
          [9, 0, '0', 5], // a kernel of 0 ns: still a hit
          [12, 1, '10', 6], // past the width: ignored
        ],
      ]),
      10,
    );
    expect(Array.from(l.occ)).toEqual([0.5, 0, 0, 1.8, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(l.hit)).toEqual([1, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
    expect(l.busyCols).toBe(3);
    expect(l.kernels).toBe(4);
    expect(l.top[3]).toBe(2); // the longer of the two
    expect(l.top[1]).toBe(-1);
  });
  it('says which clock the lanes are aligned on', () => {
    expect(clockNote(['b', 'a', 'b'])).toMatch(/^Aligned on the wall clock: .* \(2 hosts: a, b\)\. The offsets/);
    expect(clockNote(['h'])).toMatch(/1 host: h\)\. One clock/);
  });
  it('zooms to a column range, never below a ns per column', () => {
    expect(zoomTo(1000n, 2000n, 10, 2, 5)).toEqual([1200n, 1500n]);
    expect(zoomTo(1000n, 2000n, 10, 5, 2)).toEqual([1200n, 1500n]);
    const [f, t] = zoomTo(1000n, 1010n, 10, 3, 4);
    expect(t - f).toBe(10n);
  });
});
