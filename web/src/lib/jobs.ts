// jobs.ts - a job's answer (GET /jobs/{id}, docs/api.md "Jobs") shaped for
// the Job page: one row per rank with its numbers, the step-time chart's
// geometry, and how a session names its job and rank in the lists.
import { num } from './api';
import type { JobDetail, Session } from './types';

export interface RankRow {
  rank: number | null;
  session: string;
  host: string;
  state: string;
  stepScope: string | null;
  steps: number;
  stepMedian: number; // ns
  computeMedian: number; // ns, outside collectives
  kernelNs: number;
  collectiveNs: number;
  busy: number; // share of the span, 0..1
  collShare: number; // collective over kernel time, 0..1
  straggler: boolean;
  series: number[]; // step durations, ns (every k-th step past 500)
}

export function rankRows(j: JobDetail): RankRow[] {
  return j.ranks.map((r) => ({
    rank: r.rank === null || r.rank === undefined ? null : Number(r.rank),
    session: r.session,
    host: r.host,
    state: r.state,
    stepScope: r.step_scope,
    steps: Number(r.steps),
    stepMedian: num(r.step_median_ns),
    computeMedian: num(r.compute_median_ns),
    kernelNs: num(r.kernel_ns),
    collectiveNs: num(r.collective_ns),
    busy: r.busy_share,
    collShare: r.collective_share,
    straggler: r.straggler,
    series: (r.steps_ns ?? []).map(num),
  }));
}

/* "rank 2 of 4", "rank 2", "no rank" */
export function rankLabel(rank: number | null | undefined, world?: number | null): string {
  if (rank === null || rank === undefined) return 'no rank';
  return 'rank ' + rank + (world ? ' of ' + world : '');
}

/* A session's job and rank as the lists show them; null: not in a job. */
export function jobLabel(s: Pick<Session, 'job' | 'rank' | 'world_size'>): string | null {
  if (s.job === undefined || s.job === null) return null;
  return 'job ' + s.job + ' · ' + rankLabel(s.rank, s.world_size);
}

/* Sessions grouped by job (sessions without one under ''), each group by
   rank then start; groups keep the order of their newest session. */
export function groupByJob<T extends Pick<Session, 'job' | 'rank' | 'start_ns'>>(items: T[]): [string, T[]][] {
  const m = new Map<string, T[]>();
  for (const s of items) {
    const k = s.job ?? '';
    if (!m.has(k)) m.set(k, []);
    m.get(k)!.push(s);
  }
  for (const [k, v] of m)
    if (k)
      v.sort((a, b) => {
        const ra = a.rank ?? Infinity;
        const rb = b.rank ?? Infinity;
        if (ra !== rb) return ra - rb;
        return BigInt(a.start_ns) < BigInt(b.start_ns) ? -1 : BigInt(a.start_ns) > BigInt(b.start_ns) ? 1 : 0;
      });
  return [...m.entries()];
}

/* A ratio with its 95 % interval: "×1.299 (95 % interval 1.254-1.363)";
   hi null: unbounded. */
export function fmtRatio(ratio: number | null, lo?: number | null, hi?: number | null): string {
  if (ratio === null || ratio === undefined) return '-';
  let s = '×' + ratio.toFixed(3);
  if (lo !== null && lo !== undefined)
    s += ' (95 % interval ' + lo.toFixed(3) + '–' + (hi === null || hi === undefined ? '∞' : hi.toFixed(3)) + ')';
  return s;
}

/* A Mann-Whitney p as the API rounds it (6 decimals): 0 is "< 0.000001". */
export function fmtP(p: number | null | undefined): string {
  if (p === null || p === undefined) return '-';
  if (p < 0.000001) return '< 0.000001';
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

export interface ChartGeo {
  yMax: number; // ns at the top
  /* per rank: the median step (y, h) and, inside it, the median outside
     collectives (cy, ch) - what the straggler verdict compares */
  bars: {
    rank: number | null;
    x: number;
    y: number;
    w: number;
    h: number;
    v: number;
    cy: number;
    ch: number;
    c: number;
    straggler: boolean;
  }[];
  lines: { rank: number | null; d: string; straggler: boolean }[];
  ticks: { y: number; v: number }[];
}

/* The step-time chart: per rank a bar of its median step time (left
   part, barW wide each) and its series as a line over the plot (x: step
   index scaled to the width, y: ns, 0 at the bottom). */
export function chartGeo(rows: RankRow[], w: number, h: number, barW: number): ChartGeo {
  let yMax = 0;
  for (const r of rows) {
    yMax = Math.max(yMax, r.stepMedian);
    for (const v of r.series) yMax = Math.max(yMax, v);
  }
  yMax = niceCeil(yMax);
  const y = (v: number) => (yMax > 0 ? h - (v / yMax) * h : h);
  const bars = rows.map((r, i) => ({
    rank: r.rank,
    x: i * barW + 2,
    y: y(r.stepMedian),
    w: barW - 4,
    h: h - y(r.stepMedian),
    v: r.stepMedian,
    cy: y(r.computeMedian),
    ch: h - y(r.computeMedian),
    c: r.computeMedian,
    straggler: r.straggler,
  }));
  const x0 = rows.length * barW + 16;
  const lw = Math.max(1, w - x0);
  const lines = rows.map((r) => {
    const n = r.series.length;
    const pts = r.series.map(
      (v, i) => (i ? 'L' : 'M') + (x0 + (n > 1 ? (i / (n - 1)) * lw : 0)).toFixed(1) + ',' + y(v).toFixed(1),
    );
    return { rank: r.rank, d: pts.join(''), straggler: r.straggler };
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ y: y(yMax * f), v: yMax * f }));
  return { yMax, bars, lines, ticks };
}

/* The smallest 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k at least v (0 for 0). */
export function niceCeil(v: number): number {
  if (!(v > 0)) return 0;
  const e = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * e >= v * (1 - 1e-12)) return m * e;
  return 10 * e;
}
