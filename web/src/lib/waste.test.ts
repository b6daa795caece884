import { describe, expect, it } from 'vitest';
import {
  fmtCost,
  fmtGpuH,
  fmtRate,
  isEmptyWaste,
  gpuOfKey,
  gpuWasteNs,
  ownerLabel,
  rangeOf,
  sortGpus,
  sortTop,
  stackChart,
  statesSummary,
  stripLayout,
  stripStates,
  timeTicks,
  topHref,
  wasteShare,
  type WasteAnswer,
} from './waste';

const H = 3600n * 1000000000n;
const T0 = 1800000000000000000n - (1800000000000000000n % H); // on an hour
const ns = (x: bigint) => x.toString();

/* An answer as GET /api/v1/fleet/waste writes it: 4 hours by user, 1 h
   steps, 2 GPUs (ns times as decimal strings, docs/api.md "Numbers"). */
const answer: WasteAnswer = {
  by: 'user',
  from: ns(T0),
  to: ns(T0 + 4n * H),
  step_s: 3600,
  currency: 'USD',
  simulated: true,
  now: { gpus_by_state: { BUSY: 3, HELD: 1, STUCK: 0, WEIRD: 2 }, waste_rate: 1.5 },
  totals: {
    busy_gpu_h: 10,
    wasted_gpu_h: 4.5,
    cost: 18,
    by_reason: { idle: 1, held: 2, phantom: 0.5, stuck: 1, allocated_unused: 0 },
  },
  top: [
    { key: 'alice', busy_gpu_h: 2, wasted_gpu_h: 3, cost: 12, by_reason: { held: 2, stuck: 1 } },
    { key: 'bob', busy_gpu_h: 8, wasted_gpu_h: 1.5, cost: null, by_reason: { idle: 1, phantom: 0.5 } },
    { key: 'carol', busy_gpu_h: 0, wasted_gpu_h: 3, cost: 6, by_reason: { allocated_unused: 3 } },
  ],
  series: [
    { t: ns(T0 + H), by_reason: { held: 1, stuck: 0.5 } },
    { t: ns(T0), by_reason: { idle: 1, held: 1 } },
    { t: ns(T0 + 3n * H), by_reason: { phantom: 0.5, stuck: 0.5 } },
    { t: ns(T0 + 9n * H), by_reason: { idle: 7 } }, // outside the range
  ],
  gpus: [
    {
      host: 'h1',
      dev: 0,
      uuid: 'GPU-1',
      model: 'H100',
      strip: [
        { from: ns(T0), to: ns(T0 + 2n * H), state: 'BUSY' },
        { from: ns(T0 + 2n * H), to: ns(T0 + 4n * H), state: 'HELD' },
      ],
    },
  ],
};

describe('stackChart', () => {
  const c = stackChart(answer.series, answer.from, answer.to, answer.step_s, 400, 100);
  it('one bar per bucket in the range, in time order, from t to t + step', () => {
    expect(c.buckets.map((b) => [b.t, b.x, b.w, b.total])).toEqual([
      [ns(T0), 0, 100, 2],
      [ns(T0 + H), 100, 100, 1.5],
      [ns(T0 + 3n * H), 300, 100, 1],
    ]);
  });
  it('stacks the reasons bottom up in REASONS order, heights in proportion', () => {
    expect(c.yMax).toBe(2);
    const first = c.rects.filter((r) => r.t === ns(T0));
    expect(first.map((r) => [r.reason, r.y, r.h])).toEqual([
      ['idle', 50, 50],
      ['held', 0, 50],
    ]);
    const second = c.rects.filter((r) => r.t === ns(T0 + H));
    expect(second.map((r) => [r.reason, r.y, r.h])).toEqual([
      ['held', 50, 50],
      ['stuck', 25, 25],
    ]);
    // the sum of the parts = the API's GPU-hours
    const sum = c.rects.reduce((a, r) => a + r.value, 0);
    expect(sum).toBeCloseTo(4.5);
  });
  it('sums a repeated bucket and cuts a bar at the range end', () => {
    const s = stackChart(
      [
        { t: ns(T0), by_reason: { idle: 1 } },
        { t: ns(T0), by_reason: { idle: 2 } },
      ],
      ns(T0),
      ns(T0 + H / 2n),
      3600,
      100,
      10,
    );
    expect(s.buckets).toEqual([{ t: ns(T0), x: 0, w: 100, total: 3 }]);
    expect(s.yMax).toBe(3);
  });
  it('an empty series: no bars, an axis of 1', () => {
    const s = stackChart([], answer.from, answer.to, 3600, 100, 10);
    expect(s.rects).toEqual([]);
    expect(s.yMax).toBe(1);
  });
});

describe('stripLayout', () => {
  it('maps segments to whole pixels over the range', () => {
    expect(stripLayout(answer.gpus[0].strip, answer.from, answer.to, 400)).toEqual([
      { x: 0, w: 200, state: 'BUSY', from: ns(T0), to: ns(T0 + 2n * H) },
      { x: 200, w: 200, state: 'HELD', from: ns(T0 + 2n * H), to: ns(T0 + 4n * H) },
    ]);
  });
  it('cuts segments at the range, leaves a gap where no verdict was seen', () => {
    const p = stripLayout(
      [
        { from: ns(T0 - H), to: ns(T0 + H), state: 'BUSY' },
        { from: ns(T0 + 3n * H), to: ns(T0 + 5n * H), state: 'STUCK' },
      ],
      ns(T0),
      ns(T0 + 4n * H),
      100,
    );
    expect(p.map((s) => [s.x, s.w, s.state, s.from, s.to])).toEqual([
      [0, 25, 'BUSY', ns(T0), ns(T0 + H)],
      [75, 25, 'STUCK', ns(T0 + 3n * H), ns(T0 + 4n * H)],
    ]);
  });
  it('a waste state shorter than a pixel takes the pixel of a busy one', () => {
    const min = 60n * 1000000000n;
    const p = stripLayout(
      [
        { from: ns(T0), to: ns(T0 + H), state: 'BUSY' },
        { from: ns(T0 + H), to: ns(T0 + H + min), state: 'STUCK' },
        { from: ns(T0 + H + min), to: ns(T0 + 48n * H), state: 'BUSY' },
      ],
      ns(T0),
      ns(T0 + 720n * H), // 30 days on 100 px: a minute is 0.0002 px
      100,
    );
    expect(p.map((s) => [s.x, s.w, s.state])).toEqual([
      [0, 1, 'STUCK'], // the hour of BUSY had pixel 0 alone; the STUCK minute takes it
      [1, 6, 'BUSY'], // 47 h: up to pixel 6.5, starts after the taken one
    ]);
  });
  it('merges touching segments of one state and orders by time', () => {
    const p = stripLayout(
      [
        { from: ns(T0 + H), to: ns(T0 + 2n * H), state: 'HELD' },
        { from: ns(T0), to: ns(T0 + H), state: 'HELD' },
      ],
      ns(T0),
      ns(T0 + 2n * H),
      10,
    );
    expect(p).toEqual([{ x: 0, w: 10, state: 'HELD', from: ns(T0), to: ns(T0 + 2n * H) }]);
  });
  it('nothing for an empty range or width', () => {
    expect(stripLayout(answer.gpus[0].strip, answer.to, answer.from, 100)).toEqual([]);
    expect(stripLayout(answer.gpus[0].strip, answer.from, answer.to, 0)).toEqual([]);
  });
  it('the legend lists the states used, known ones first', () => {
    expect(
      stripStates([...answer.gpus, { host: 'h2', dev: 1, strip: [{ from: ns(T0), to: ns(T0 + H), state: 'ZZZ' }] }]),
    ).toEqual(['BUSY', 'HELD', 'ZZZ']);
  });
});

describe('formats', () => {
  it('GPU-hours', () => {
    expect(fmtGpuH(0)).toBe('0 GPU·h');
    expect(fmtGpuH(0.001)).toBe('<0.01 GPU·h');
    expect(fmtGpuH(0.25)).toBe('0.25 GPU·h');
    expect(fmtGpuH(12.34)).toBe('12.3 GPU·h');
    expect(fmtGpuH(12345.6)).toBe('12,346 GPU·h');
    expect(fmtGpuH(null)).toBe('-');
  });
  it('cost: the currency, null is no price', () => {
    expect(fmtCost(12, 'USD')).toBe('$12.00');
    expect(fmtCost(1234.5, 'EUR')).toBe('€1,235');
    expect(fmtCost(null, 'USD')).toBe('-');
    expect(fmtCost(3.5, 'credits')).toBe('3.50 credits');
  });
  it('rate and share', () => {
    expect(fmtRate(1.5)).toBe('1.50 GPUs');
    expect(fmtRate(1)).toBe('1.00 GPU');
    expect(fmtRate(12.25)).toBe('12.3 GPUs');
    expect(wasteShare(10, 4.5)).toBeCloseTo(4.5 / 14.5);
    expect(wasteShare(0, 0)).toBeNull();
  });
});

describe('header and empty state', () => {
  it('states in legend order, unknown ones after, zeros left out', () => {
    expect(statesSummary(answer.now.gpus_by_state)).toEqual({
      items: [
        ['BUSY', 3],
        ['HELD', 1],
        ['WEIRD', 2],
      ],
      total: 6,
    });
  });
  it('empty only when nothing at all was counted', () => {
    expect(isEmptyWaste(answer)).toBe(false);
    const none: WasteAnswer = {
      ...answer,
      now: { gpus_by_state: {}, waste_rate: 0 },
      totals: { busy_gpu_h: 0, wasted_gpu_h: 0, cost: null, by_reason: {} },
      top: [],
      series: [{ t: ns(T0), by_reason: {} }],
      gpus: [],
    };
    expect(isEmptyWaste(none)).toBe(true);
    expect(isEmptyWaste({ ...none, now: { gpus_by_state: { BUSY: 1 }, waste_rate: 0 } })).toBe(false);
    expect(isEmptyWaste({ ...none, totals: { ...none.totals, busy_gpu_h: 0.1 } })).toBe(false);
  });
});

describe('top wasters', () => {
  it('by wasted, then key; by cost with no price last either way', () => {
    expect(sortTop(answer.top, 'wasted', true).map((r) => r.key)).toEqual(['alice', 'carol', 'bob']);
    expect(sortTop(answer.top, 'wasted', false).map((r) => r.key)).toEqual(['bob', 'alice', 'carol']);
    expect(sortTop(answer.top, 'cost', true).map((r) => r.key)).toEqual(['alice', 'carol', 'bob']);
    expect(sortTop(answer.top, 'cost', false).map((r) => r.key)).toEqual(['carol', 'alice', 'bob']);
    expect(sortTop(answer.top, 'busy', true).map((r) => r.key)).toEqual(['bob', 'alice', 'carol']);
    expect(sortTop(answer.top, 'allocated_unused', true).map((r) => r.key)).toEqual(['carol', 'alice', 'bob']);
    expect(sortTop(answer.top, 'share', true).map((r) => r.key)).toEqual(['carol', 'alice', 'bob']);
  });
  it('links a job and a host, nothing else', () => {
    expect(topHref('job', 'slurm-42')).toBe('#/jobs?job=slurm-42');
    expect(topHref('host', 'node 1')).toBe('#/sessions?q=node+1');
    expect(topHref('user', 'alice')).toBeNull();
    expect(topHref('job', '')).toBeNull();
    expect(topHref('host', '(other)')).toBeNull();
  });
  it('names the unnamed owner; finds the GPU of a by=gpu key', () => {
    expect(ownerLabel('')).toBe('(not named)');
    expect(ownerLabel('alice')).toBe('alice');
    const g2 = { host: 'h2', dev: 3, strip: [] };
    expect(gpuOfKey([answer.gpus[0], g2], 'GPU-1')).toBe(answer.gpus[0]);
    expect(gpuOfKey([answer.gpus[0], g2], 'h2:3')).toBe(g2);
    expect(gpuOfKey([answer.gpus[0], g2], 'h1:0')).toBeNull(); // h1:0 has a UUID: its key is that
  });
});

describe('range', () => {
  it('the last s seconds, the end on a step boundary after now', () => {
    const now = Number((T0 + H + 5n * 60n * 1000000000n) / 1000000n); // 1 h 5 min past T0, in ms
    const r = rangeOf(3600, 60, now);
    expect(BigInt(r.to) - BigInt(r.from)).toBe(H);
    expect(BigInt(r.to) % (60n * 1000000000n)).toBe(0n);
    expect(BigInt(r.to)).toBeGreaterThan(BigInt(now) * 1000000n);
    expect(BigInt(r.to) - BigInt(now) * 1000000n).toBeLessThanOrEqual(60n * 1000000000n);
  });
  it('time ticks: hours within a day, the date beyond', () => {
    expect(timeTicks(ns(T0), ns(T0 + 4n * H), 400, 4).map((t) => t.x)).toEqual([0, 100, 200, 300, 400]);
    const short = timeTicks(ns(T0), ns(T0 + 4n * H), 400, 4);
    expect(short[0].label).toMatch(/^\d\d:\d\d$/);
    const long = timeTicks(ns(T0), ns(T0 + 48n * H), 400, 4);
    expect(long[0].label).toMatch(/^\d\d-\d\d \d\d:\d\d$/);
  });
});

describe('GPUs', () => {
  it('most wasted first, the waste cut to the range', () => {
    const g2 = {
      host: 'a',
      dev: 3,
      strip: [{ from: ns(T0 - 5n * H), to: ns(T0 + 3n * H), state: 'PHANTOM' }],
    };
    const g3 = { host: 'a', dev: 1, strip: [{ from: ns(T0), to: ns(T0 + 4n * H), state: 'BUSY' }] };
    expect(gpuWasteNs(answer.gpus[0], answer.from, answer.to)).toBe(2n * H);
    expect(gpuWasteNs(g2, answer.from, answer.to)).toBe(3n * H);
    expect(sortGpus([g3, answer.gpus[0], g2], answer.from, answer.to).map((g) => g.host + ':' + g.dev)).toEqual([
      'a:3',
      'h1:0',
      'a:1',
    ]);
  });
});
