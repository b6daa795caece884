// regress.ts - the regression scan's findings (docs/api.md "Regressions")
// shaped for the Regressions view: grouped by app, then by session (the
// server's order: newest session first, worst finding first), each
// finding in words, and the links to both runs' Kernels views at that
// kernel name.
import { num } from './api';
import { fmtNs } from './format';
import { fmtP, fmtRatio } from './jobs';
import { formatHash } from './url';
import type { Regression, Session } from './types';

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
  const cur = f.cur_median_ns === null ? null : num(f.cur_median_ns);
  const base = f.base_median_ns === null ? null : num(f.base_median_ns);
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

/* The baseline run to look at beside a finding's session: the newest
   ended session of the app that started no later than it (other than
   itself) - the first of the server's baseline sessions, as long as no
   session that started earlier has ended since the scan. `ended` newest
   first, as GET /sessions lists them. */
export function baselineOf(ended: Pick<Session, 'id' | 'start_ns' | 'state'>[], f: RegSession): string | null {
  const t = BigInt(f.start_ns);
  for (const s of ended) if (s.state === 'ended' && s.id !== f.session && BigInt(s.start_ns) <= t) return s.id;
  return null;
}
