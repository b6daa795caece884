import { describe, expect, it } from 'vitest';
import { copySpans, parseCalls, scopesOf } from './sources';
import type { CallsAnswer, ExportAnswer } from './types';

describe('scope instances from an export', () => {
  it('offsets exact to the ns, depth from nesting per thread', () => {
    const base = 1000_000_000n;
    const ev = (name: string, tid: number, ts: number, dur: number) => ({
      name,
      cat: 'scope',
      ph: 'X',
      pid: 1,
      tid,
      ts,
      dur,
      args: { id: 1 },
    });
    const a: ExportAnswer = {
      traceEvents: [
        ev('epoch', 7, -10, 1000),
        ev('step', 7, 1.5, 100.25),
        ev('fwd', 7, 2.001, 40),
        ev('bwd', 7, 50, 40),
        ev('step', 7, 200, 100),
        ev('loader', 9, 0, 500),
        { name: 'cudaLaunchKernel', cat: 'launch', ph: 'X', pid: 1, tid: 7, ts: 3, dur: 1 },
      ],
      otherData: { session: 's', from: String(base + 5000n), to: String(base + 900000n), truncated: false },
    };
    const s = scopesOf(a, base);
    expect(s.map((x) => [x.name, x.depth, x.t, x.dur])).toEqual([
      ['epoch', 0, 5000 - 10000, 1000000],
      ['loader', 0, 5000, 500000],
      ['step', 1, 5000 + 1500, 100250],
      ['fwd', 2, 5000 + 2001, 40000],
      ['bwd', 2, 5000 + 50000, 40000],
      ['step', 1, 5000 + 200000, 100000],
    ]);
    expect(s.find((x) => x.name === 'fwd')!.path).toBe('epoch/step/fwd');
  });
});

describe('API calls and copies', () => {
  it('a complete tile lists calls per thread; a summary one its columns', () => {
    const base = 0n;
    const full: CallsAnswer = {
      from: '0',
      to: '1024',
      complete: true,
      count: 1,
      threads: [
        {
          tid: 5,
          calls: [
            { type: 'launch', ts: '10', dur: '4', seq: 77, corr: 3, dev: 0, stream: 7, gpu_ts: '30', gpu_dur: '9' },
          ],
        },
      ],
    };
    const t = parseCalls(full, 1, 0, base);
    expect(t.threads.get(5)!.calls![0]).toMatchObject({ t: 10, dur: 4, kid: 77, gpuT: 30, gpuDur: 9 });
    const sum: CallsAnswer = {
      from: '0',
      to: '1024',
      complete: false,
      count: 9000,
      width: 1024,
      bucket_ns: '1',
      threads: [{ tid: 5, buckets: [[3, 2, '1']] }],
    };
    const u = parseCalls(sum, 1, 0, base);
    expect(u.threads.get(5)!.calls).toBeNull();
    expect(u.threads.get(5)!.cols).toEqual([{ t: 3, res: 1, share: 1, n: 2 }]);
  });
  it('copies per lane: memcpy by direction, memset, sync; allocs left out', () => {
    const m = copySpans(
      [
        { seq: 1, type: 'memcpy', ts: '20', dur: '5', dev: 0, kind: 'htod', bytes: '100' },
        { seq: 2, type: 'memcpy', ts: '10', dur: '5', dev: 0, kind: 'htod', bytes: '50' },
        { seq: 3, type: 'alloc', ts: '10', dev: 0, bytes: '50' },
        { seq: 4, type: 'memset', ts: '12', dur: '1', dev: 1, bytes: '8' },
      ],
      0n,
    );
    expect([...m.keys()].sort()).toEqual(['c0:memcpy htod', 'c1:memset']);
    expect(m.get('c0:memcpy htod')!.spans.map((x) => x.seq)).toEqual([2, 1]);
  });
});
