import { describe, expect, it } from 'vitest';
import {
  baselineOf,
  baselinesOf,
  describe as say,
  distributions,
  groupFindings,
  kernelsHref,
  valuesOf,
} from './regress';
import { parseHash } from './url';
import type { Durations, Regression } from './types';

const f = (o: Partial<Regression>): Regression => ({
  session: 's2',
  app: 'nightly',
  start_ns: '200',
  kind: 'slower',
  name: 'ampere_sgemm_128x64_nn',
  base_median_ns: '400512',
  cur_median_ns: '480121',
  ratio: 1.1988,
  lo: 1.1851,
  hi: 1.2139,
  p: 0,
  noise: 0.0129,
  base_count: 60,
  cur_count: 60,
  base_sessions: 5,
  ...o,
});

describe('regressions', () => {
  it('groups findings by app, then by session, in the server order', () => {
    const g = groupFindings([
      f({}),
      f({ name: 'k2', kind: 'new' }),
      f({ session: 's1', start_ns: '100', kind: 'faster' }),
      f({ app: 'other', session: 's9' }),
    ]);
    expect(g.map((a) => a.app)).toEqual(['nightly', 'other']);
    expect(g[0].sessions.map((s) => [s.session, s.items.length])).toEqual([
      ['s2', 2],
      ['s1', 1],
    ]);
    expect(g[0].counts).toEqual({ slower: 1, new: 1, faster: 1 });
    expect(g[0].sessions[0].baseSessions).toBe(5);
  });
  it('says what changed in words and numbers', () => {
    expect(say(f({}))).toBe(
      'median 400.5 µs → 480.1 µs, ×1.199 (95 % interval 1.185–1.214), Mann-Whitney p < 0.000001, baseline noise 1.3 %; calls 60 → 60',
    );
    expect(say(f({ kind: 'new', base_median_ns: null, ratio: null, lo: null, hi: null, base_count: 0 }))).toBe(
      'not run by any baseline session; median 480.1 µs, calls 0 → 60',
    );
    expect(say(f({ kind: 'vanished', cur_count: 0, cur_median_ns: null }))).toMatch(/not by this one; calls 60 → 0$/);
    expect(say(f({ kind: 'count', base_count: 12.5, cur_count: 60 }))).toBe('number of calls changed: calls 12.5 → 60');
  });
  it('links to the Kernels view filtered at the kernel name', () => {
    const name = 'void f<int, 3>(int*) & more';
    const st = parseHash(kernelsHref('s2', name));
    expect(st).toEqual({ tab: 'kernels', s: 's2', q: name });
  });
  it('finds the newest baseline run: ended, started no later, not itself', () => {
    const rs = { session: 's2', start_ns: '200', baseSessions: 5, items: [] };
    const ended = [
      { id: 's3', start_ns: '300', state: 'ended' },
      { id: 's2', start_ns: '200', state: 'ended' },
      { id: 'sx', start_ns: '150', state: 'stale' },
      { id: 's1', start_ns: '100', state: 'ended' },
    ];
    expect(baselineOf(ended, rs)).toBe('s1');
    expect(baselineOf(ended.slice(0, 2), rs)).toBeNull();
  });
  it("takes a job rank's baseline from the same rank of other jobs, never its own job", () => {
    const ended = [
      { id: 'b3', start_ns: '400', state: 'ended', job: 'j2', rank: 3 },
      { id: 'b0', start_ns: '400', state: 'ended', job: 'j2', rank: 0 },
      { id: 'a3', start_ns: '300', state: 'ended', job: 'j1', rank: 3 },
      { id: 'a1', start_ns: '300', state: 'ended', job: 'j1', rank: 1 },
      { id: 'solo', start_ns: '200', state: 'ended' },
      { id: 'z1', start_ns: '100', state: 'ended', job: 'j0', rank: 1 },
    ];
    // j2's rank 1 (not in the list): not b3 or b0 (its own job), not a3
    const me = { id: 'b1', start_ns: '400', state: 'ended', job: 'j2', rank: 1 };
    expect(baselinesOf(ended, { session: 'b1', start_ns: '400' }, 5, me)).toEqual(['a1', 'solo', 'z1']);
    expect(baselinesOf(ended, { session: 'b1', start_ns: '400' }, 2, me)).toEqual(['a1', 'solo']);
    // a run without a job: every earlier ended run of the app
    expect(baselinesOf(ended, { session: 'solo', start_ns: '200' }, 5)).toEqual(['z1']);
    // the session found in the list itself
    expect(baselinesOf(ended, { session: 'a3', start_ns: '300' }, 5)).toEqual(['solo']);
  });
  it('draws two distributions on one log axis, each run of the baseline weighing the same', () => {
    const d = distributions([[100, 100, 100, 100], [250]], [400, 400], 2)!;
    expect(d.edges[0]).toBeCloseTo(100);
    expect(d.edges[2]).toBeCloseTo(400);
    expect(d.edges[1]).toBeCloseTo(200); // log midpoint
    // run 1 all in bin 0, run 2 in bin 1: half each, not 4/5 and 1/5
    expect(d.base).toEqual([0.5, 0.5]);
    expect(d.cur).toEqual([0, 1]);
    expect(distributions([[]], [1])).toBeNull();
    expect(distributions([[5]], [])).toBeNull();
    const e = distributions([[1000, 1100]], [1200, 1300])!;
    expect(e.base.reduce((a, b) => a + b, 0)).toBeCloseTo(1);
    expect(e.cur.reduce((a, b) => a + b, 0)).toBeCloseTo(1);
  });
  it("picks a finding's values by kernel name or by scope path", () => {
    const d: Durations = {
      session: 's',
      sample: 256,
      by_kernel: [{ name: 'train_step', count: 2, total_ns: '3', values: [1, 2] }],
      by_scope: [{ path: 'train_step', count: 1, total_ns: '9', values: ['9'] }],
      truncated: false,
    };
    expect(valuesOf(d, { name: 'train_step', subject: 'kernel' })).toEqual([1, 2]);
    expect(valuesOf(d, { name: 'train_step' })).toEqual([1, 2]);
    expect(valuesOf(d, { name: 'train_step', subject: 'step' })).toEqual([9]);
    expect(valuesOf(d, { name: 'nope', subject: 'scope' })).toEqual([]);
  });
  it('says a peak memory finding in bytes', () => {
    expect(
      say(
        f({
          subject: 'memory',
          name: 'peak GPU memory',
          base_median_ns: undefined,
          cur_median_ns: undefined,
          base_peak_bytes: String(10 * 2 ** 30),
          cur_peak_bytes: String(13 * 2 ** 30),
          ratio: 1.3,
          noise: 0.02,
        }),
      ),
    ).toMatch(
      /^peak GPU memory 10(\.0)? GiB .* → 13(\.0)? GiB, x1\.300; beyond every baseline run and their spread \(2\.0 %\)$/,
    );
  });
});
