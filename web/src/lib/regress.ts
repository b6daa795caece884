// regress.ts - the regression scan's findings (docs/api.md "Regressions")
// shaped for the Regressions view: grouped by app, then by session (the
// server's order: newest session first, worst finding first), each
// finding in words, the links to both runs' Kernels views at that
// kernel name, the baseline runs of a finding and the two distributions
// (baseline runs, this run) drawn side by side.
import { num } from './api';
import { fmtBytes, fmtNs } from './format';
import { fmtP, fmtRatio } from './jobs';
import { formatHash } from './url';
import type { Durations, Regression, Session } from './types';

export interface RegSession {
  session: string;
  start_ns: string;
  baseSessions: number;
  items: Regression[];
}

export interface RegApp {
  app: string;
  sessions: RegSession[];
  counts: Record<string, number>; // findings per kind
}

export const KINDS = ['slower', 'faster', 'new', 'vanished', 'count'] as const;

export function groupFindings(items: Regression[]): RegApp[] {
  const apps = new Map<string, RegApp>();
  const sess = new Map<string, RegSession>();
  for (const f of items) {
    let a = apps.get(f.app);
    if (!a) {
      a = { app: f.app, sessions: [], counts: {} };
      apps.set(f.app, a);
    }
    a.counts[f.kind] = (a.counts[f.kind] ?? 0) + 1;
    let s = sess.get(f.session);
    if (!s) {
      s = { session: f.session, start_ns: f.start_ns, baseSessions: Number(f.base_sessions), items: [] };
      sess.set(f.session, s);
      a.sessions.push(s);
    }
    s.items.push(f);
  }
  return [...apps.values()];
}

/* What changed, in words. */
export function describe(f: Regression): string {
  if (f.subject === 'memory')
    return (
      'peak GPU memory ' +
      (f.base_peak_bytes == null ? '-' : fmtBytes(f.base_peak_bytes)) +
      ' (median of the baseline runs) → ' +
      (f.cur_peak_bytes == null ? '-' : fmtBytes(f.cur_peak_bytes)) +
      ', x' +
      (f.ratio === null ? '-' : f.ratio.toFixed(3)) +
      '; beyond every baseline run and their spread (' +
      (f.noise === null ? '-' : (f.noise * 100).toFixed(1) + ' %') +
      ')'
    );
  const cur = f.cur_median_ns == null ? null : num(f.cur_median_ns);
  const base = f.base_median_ns == null ? null : num(f.base_median_ns);
  const calls = 'calls ' + fmtCount(f.base_count) + ' → ' + Number(f.cur_count);
  switch (f.kind) {
    case 'slower':
    case 'faster':
      return (
        'median ' +
        (base === null ? '-' : fmtNs(base)) +
        ' → ' +
        (cur === null ? '-' : fmtNs(cur)) +
        ', ' +
        fmtRatio(f.ratio, f.lo, f.hi) +
        ', Mann-Whitney p ' +
        fmtP(f.p) +
        ', baseline noise ' +
        (f.noise === null ? '-' : (f.noise * 100).toFixed(1) + ' %') +
        '; ' +
        calls
      );
    case 'new':
      return 'not run by any baseline session; median ' + (cur === null ? '-' : fmtNs(cur)) + ', ' + calls;
    case 'vanished':
      return 'run by every baseline session, not by this one; ' + calls;
    default:
      return 'number of calls changed: ' + calls;
  }
}

/* A mean count of the baseline: whole when it is. */
export function fmtCount(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

/* The Kernels view of a session, its table and the timeline's search
   marks filtered at a kernel name (the URL state `q`). */
export function kernelsHref(session: string, name: string): string {
  return formatHash({ tab: 'kernels', s: session, q: name });
}

type Cand = Pick<Session, 'id' | 'start_ns' | 'state'> & { job?: string; rank?: number };

/* The baseline runs the server compared a finding's session with: the
   newest n ended sessions of the app that started no later than it
   (other than itself); for a rank of a job (`self`: the session's job and
   rank, when known) only the same rank of the app's other jobs and its
   runs without a job - never its own job's other ranks
   (store_sql_regress.c). Right as long as no session that started earlier
   has ended since the scan. `ended` newest first, as GET /sessions lists
   them. */
export function baselinesOf(
  ended: Cand[],
  f: Pick<RegSession, 'session' | 'start_ns'>,
  n: number,
  self?: Cand,
): string[] {
  const t = BigInt(f.start_ns);
  const me = self ?? ended.find((s) => s.id === f.session);
  const out: string[] = [];
  for (const s of ended) {
    if (out.length >= n) break;
    if (s.state !== 'ended' || s.id === f.session || BigInt(s.start_ns) > t) continue;
    if (me?.job && s.job && (s.job === me.job || s.rank !== me.rank)) continue;
    out.push(s.id);
  }
  return out;
}

/* The newest of them: the baseline run to link to. */
export function baselineOf(ended: Cand[], f: RegSession, self?: Cand): string | null {
  return baselinesOf(ended, f, 1, self)[0] ?? null;
}

/* Two distributions on one axis: the baseline runs' (each run weighs the
   same, as each is one group of the scan) and this run's, as the share of
   values in each of `bins` log-spaced bins between the smallest and the
   largest value of either side. null when a side has no value. */
export interface Dist {
  edges: number[]; // bins + 1, ascending
  base: number[]; // share per bin, sums to 1
  cur: number[];
}

export function distributions(base: number[][], cur: number[], bins = 24): Dist | null {
  const runs = base.filter((v) => v.length > 0);
  if (!runs.length || !cur.length) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of [...runs, cur])
    for (const x of v) {
      lo = Math.min(lo, x);
      hi = Math.max(hi, x);
    }
  lo = Math.max(lo, 1);
  hi = Math.max(hi, lo * 1.01);
  const l0 = Math.log(lo);
  const w = (Math.log(hi) - l0) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => Math.exp(l0 + i * w));
  const bin = (x: number) => Math.min(bins - 1, Math.max(0, Math.floor((Math.log(Math.max(x, lo)) - l0) / w)));
  const share = (v: number[], into: number[], weight: number) => {
    for (const x of v) into[bin(x)] += weight / v.length;
  };
  const b = new Array<number>(bins).fill(0);
  const c = new Array<number>(bins).fill(0);
  for (const v of runs) share(v, b, 1 / runs.length);
  share(cur, c, 1);
  return { edges, base: b, cur: c };
}

/* The values a finding compared, from one session's GET …/durations:
   by kernel name, or by scope path for a scope or step finding. */
export function valuesOf(d: Durations, f: Pick<Regression, 'subject' | 'name'>): number[] {
  const scope = f.subject === 'scope' || f.subject === 'step';
  const set = scope ? d.by_scope.find((x) => x.path === f.name) : d.by_kernel.find((x) => x.name === f.name);
  return set ? set.values.map((x) => Number(x)) : [];
}
