import { describe, expect, it } from 'vitest';
import { chartGeo, fmtP, fmtRatio, groupByJob, jobLabel, niceCeil, rankRows } from './jobs';
import type { JobDetail } from './types';

const job: JobDetail = {
  job: 'j1',
  app: 'trainer',
  world_size: 4,
  ranks_seen: 2,
  state: 'ended',
  start_ns: '1800000000000000000',
  last_ts: '1800000000064790951',
  compute_median_ns: '1497442',
  truncated: false,
  ranks: [
    {
      rank: 0,
      local_rank: 0,
      session: 'a',
      host: 'h',
      state: 'ended',
      step_scope: 'train_step',
      steps: 3,
      step_median_ns: '2000000',
      compute_median_ns: '1500000',
      steps_ns: ['1000000', '2000000', '3000000'],
      kernel_ns: '64003176',
      collective_ns: '6035614',
      busy_share: 0.9879,
      collective_share: 0.0943,
      straggler: false,
    },
    {
      rank: 2,
      session: 'b',
      host: 'h',
      state: 'ended',
      step_scope: 'train_step',
      steps: 2,
      step_median_ns: '4000000',
      compute_median_ns: '3500000',
      steps_ns: ['4000000', '4500000'],
      kernel_ns: '1',
      collective_ns: '0',
      busy_share: 0.5,
      collective_share: 0,
      straggler: true,
    },
  ],
  stragglers: [],
  verdict: 'straggler',
};

describe('jobs', () => {
  it('shapes ranks: Dec strings to ns numbers, the series kept in order', () => {
    const r = rankRows(job);
    expect(r.map((x) => x.rank)).toEqual([0, 2]);
    expect(r[0].stepMedian).toBe(2000000);
    expect(r[0].computeMedian).toBe(1500000);
    expect(r[0].collectiveNs).toBe(6035614);
    expect(r[0].series).toEqual([1000000, 2000000, 3000000]);
    expect(r[1].straggler).toBe(true);
  });
  it('draws bars at the median and lines through each step, on one y scale', () => {
    const rows = rankRows(job);
    const g = chartGeo(rows, 500, 100, 20);
    expect(g.yMax).toBe(5000000); // 4.5 ms rounded up to 5
    expect(g.bars[1].h).toBeCloseTo((4000000 / 5000000) * 100);
    expect(g.bars[0].y).toBeCloseTo(100 - (2000000 / 5000000) * 100);
    // inside it, the median outside collectives
    expect(g.bars[1].ch).toBeCloseTo((3500000 / 5000000) * 100);
    expect(g.bars[0].cy).toBeCloseTo(100 - (1500000 / 5000000) * 100);
    // line of rank 0: from x0 (after the bars) to the right edge
    expect(g.lines[0].d).toBe('M56.0,80.0L278.0,60.0L500.0,40.0');
    expect(g.lines[1].straggler).toBe(true);
    expect(chartGeo([], 100, 100, 10).yMax).toBe(0);
  });
  it('rounds a scale up to a round 10^k multiple', () => {
    expect(niceCeil(4500000)).toBe(5000000);
    expect(niceCeil(2154385)).toBe(2500000);
    expect(niceCeil(1001)).toBe(1500);
    expect(niceCeil(8100)).toBe(10000);
    expect(niceCeil(1000)).toBe(1000);
    expect(niceCeil(0)).toBe(0);
  });
  it('says ratios, intervals and p as the API rounds them', () => {
    expect(fmtRatio(1.2993, 1.2545, 1.3627)).toBe('×1.299 (95 % interval 1.254–1.363)');
    expect(fmtRatio(1.5, 1.2, null)).toBe('×1.500 (95 % interval 1.200–∞)');
    expect(fmtRatio(null)).toBe('-');
    expect(fmtP(0)).toBe('< 0.000001');
    expect(fmtP(0.000123)).toBe('1.2e-4');
    expect(fmtP(0.25)).toBe('0.250');
  });
  it('labels and groups sessions by job, ranks in order', () => {
    expect(jobLabel({ job: 'j', rank: 0, world_size: 4 })).toBe('job j · rank 0 of 4');
    expect(jobLabel({ job: 'j' })).toBe('job j · no rank');
    expect(jobLabel({})).toBeNull();
    const g = groupByJob([
      { id: '1', job: 'j', rank: 3, start_ns: '5' },
      { id: '2', start_ns: '4' },
      { id: '3', job: 'j', rank: 0, start_ns: '3' },
      { id: '4', job: 'k', start_ns: '2' },
      { id: '5', job: 'j', rank: 0, start_ns: '1' },
    ]);
    expect(g.map(([k, v]) => [k, v.map((s) => s.id)])).toEqual([
      ['j', ['5', '3', '1']],
      ['', ['2']],
      ['k', ['4']],
    ]);
  });
});
