import { describe, expect, it } from 'vitest';
import { formatHash, parseHash, switchTab } from './url';
import { big, num, rel } from './api';
import { align, FAMILIES } from './series';

describe('URL state', () => {
  it('round-trips session, tab, zoom range and selection', () => {
    const st = {
      tab: 'kernels' as const,
      s: 'ffa34477-fc64-4f9b-be60-3a212d7e367f',
      from: '1796002169544662330',
      to: '1796002169644662330',
      sel: '10',
    };
    const h = formatHash(st);
    expect(h).toBe(
      '#/kernels?s=ffa34477-fc64-4f9b-be60-3a212d7e367f&from=1796002169544662330&to=1796002169644662330&sel=10',
    );
    expect(parseHash(h)).toEqual(st);
  });
  it('keeps epoch-ns digits exactly and drops a bad range', () => {
    expect(parseHash('#/kernels?from=1796002169544662331&to=1796002169544662332').from).toBe('1796002169544662331');
    expect(parseHash('#/kernels?from=5&to=5').from).toBeUndefined();
    expect(parseHash('#/kernels?from=x&to=9').to).toBeUndefined();
    expect(parseHash('#/nonsense').tab).toBe('sessions');
    expect(parseHash('').tab).toBe('sessions');
  });
  it('encodes selections with odd characters', () => {
    const st = { tab: 'memory' as const, s: 'a', sel: JSON.stringify(['a&b', 'c=d #e']) };
    expect(parseHash(formatHash(st)).sel).toBe(st.sel);
  });
  it('keeps the job and regressions filters, and drops them on a tab switch', () => {
    const st = { tab: 'regressions' as const, app: 'nightly run', kind: 'slower' };
    expect(parseHash(formatHash(st))).toEqual(st);
    expect(parseHash('#/jobs?job=a%2Fb%20c').job).toBe('a/b c');
    expect(switchTab({ tab: 'jobs', job: 'j', s: 'x' }, 'regressions')).toEqual({ tab: 'regressions', s: 'x' });
    expect(switchTab({ tab: 'regressions', app: 'a', kind: 'new' }, 'jobs')).toEqual({ tab: 'jobs' });
  });
  it('switching tab keeps session and zoom, drops the selection', () => {
    expect(switchTab({ tab: 'kernels', s: 'x', from: '1', to: '2', sel: '7' }, 'system')).toEqual({
      tab: 'system',
      s: 'x',
      from: '1',
      to: '2',
    });
  });
});

describe('exact 64-bit integers from the API', () => {
  it('reads decimal-string ns times and durations exactly', () => {
    // as the server writes them (docs/api.md "Numbers"): JSON.parse alone
    const j = JSON.parse('{"ts":"1796002169544662331","dur":"1500","n":12}') as { ts: string; dur: string; n: number };
    expect(big(j.ts)).toBe(1796002169544662331n);
    expect(rel(j.ts, 1796002169544662000n)).toBe(331);
    expect(num(j.dur)).toBe(1500);
    expect(num(undefined)).toBe(0);
    expect(big('-5')).toBe(-5n);
  });
});

describe('system series alignment', () => {
  it('aligns sources on one x axis in seconds, null where missing, scaled', () => {
    const fam = FAMILIES.find((f) => f.id === 'power')!;
    const base = 1000000000000000000n;
    const a = align(
      [
        {
          src: 'gpu0',
          points: [
            { t: '1000000000000000000', n: 1, power: [1000, 3000, 2000] },
            { t: '1000000001000000000', n: 1, power: [1, 1, 4000] },
          ],
        },
        { src: 'gpu1', points: [{ t: '1000000000500000000', n: 1, power: [0, 0, 500] }] },
        { src: 'host', points: [{ t: '1000000000500000000', n: 1, cpu: [1, 1, 1] }] },
      ],
      fam,
      base,
      null,
    );
    expect(a.labels).toEqual(['gpu0 power', 'gpu1 power']);
    expect(a.data).toEqual([
      [0, 0.5, 1],
      [2, null, 4],
      [null, 0.5, null],
    ]);
  });
});
