import { describe, expect, it } from 'vitest';
import { baselineOf, describe as say, groupFindings, kernelsHref } from './regress';
import { parseHash } from './url';
import type { Regression } from './types';

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
});
