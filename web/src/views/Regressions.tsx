// Regressions.tsx - what the regression scan found (docs/api.md
// "Regressions"): per app, per scanned session, each kernel or scope path
// (the step scope marked) that got slower or faster (median ratio with
// its 95 % interval, p, baseline noise), is new or vanished, or changed
// its number of calls, and a peak GPU memory beyond the baseline's; with
// links to the Kernels (or Scopes) views of the run and of its newest
// baseline run at that name, and on demand both distributions - the
// baseline runs' and this run's - on one axis.
import { useEffect, useMemo, useState } from 'react';
import type { ViewProps } from '../App';
import { api, num } from '../lib/api';
import { fmtBytes, fmtNs, fmtWall } from '../lib/format';
import { fmtP, fmtRatio } from '../lib/jobs';
import {
  baselinesOf,
  describe,
  distributions,
  fmtCount,
  groupFindings,
  kernelsHref,
  KINDS,
  RegSession,
  valuesOf,
} from '../lib/regress';
import { formatHash } from '../lib/url';
import type { Durations, Page, Regression, Session, SessionRegressions } from '../lib/types';
import { Badge, Empty, ErrorBox, Loading, useApi } from './common';

export function Regressions({ st, set }: ViewProps) {
  const app = st.app ?? '';
  const kind = st.kind ?? '';
  const all = useApi<Page<Regression>>('regressions', { limit: 1000 }, []);
  const list = useApi<Page<Regression>>('regressions', { app, kind, limit: 1000 }, [app, kind]);
  const apps = useMemo(() => [...new Set((all.data?.items ?? []).map((f) => f.app))].sort(), [all.data]);
  const groups = useMemo(() => groupFindings(list.data?.items ?? []), [list.data]);
  const pick = (k: 'app' | 'kind', v: string) => set({ ...st, [k]: v || undefined }, true);
  return (
    <div data-testid="view-regressions">
      <div className="toolbar">
        <select data-testid="reg-app" value={app} onChange={(e) => pick('app', e.target.value)}>
          <option value="">every app</option>
          {(app && !apps.includes(app) ? [app, ...apps] : apps).map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <select data-testid="reg-kind" value={kind} onChange={(e) => pick('kind', e.target.value)}>
          <option value="">every kind</option>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
        <span className="hint dim">
          Each ended session against the last ended sessions of its app (the server&apos;s --regress-baseline, default
          5; a rank of a job against the same rank of the app&apos;s other jobs): kernels, scope paths (the step scope
          marked <i>step</i>) and peak GPU memory; docs/analysis.md has the statistics.
        </span>
      </div>
      {list.error ? <ErrorBox error={list.error} what="listing regressions" /> : null}
      {!list.data && !list.error && <Loading what="regressions" />}
      {list.data && list.data.items.length === 0 && (
        <Empty>
          Nothing changed{app || kind ? ' for these filters' : ''}: no scanned session differs from its baseline. A
          session is scanned a few seconds after it ends, once at least 3 ended sessions of its app came before it.
        </Empty>
      )}
      {groups.map((g) => (
        <section key={g.app} className="group" data-testid="reg-app-block" data-app={g.app}>
          <h3>
            app {g.app}{' '}
            <span className="dim">
              ·{' '}
              {KINDS.filter((k) => g.counts[k])
                .map((k) => g.counts[k] + ' ' + k)
                .join(', ')}
            </span>
          </h3>
          {g.sessions.map((s) => (
            <RegSessionBlock key={s.session} app={g.app} s={s} />
          ))}
        </section>
      ))}
      {list.data?.next && <div className="dim">Showing the newest 1000 findings; pick an app or a kind.</div>}
    </div>
  );
}

function RegSessionBlock({ app, s }: { app: string; s: RegSession }) {
  const ended = useApi<Page<Session>>('sessions', { app, state: 'ended', limit: 500 }, [app]);
  const bases = ended.data ? baselinesOf(ended.data.items, s, s.baseSessions) : [];
  const base = bases[0] ?? null;
  return (
    <div className="regsession" data-testid="reg-session" data-session={s.session}>
      <div>
        run <a href={formatHash({ tab: 'kernels', s: s.session })}>{s.session.slice(0, 8)}</a>{' '}
        <span className="dim">
          started {fmtWall(s.start_ns)} · against {s.baseSessions} baseline session{s.baseSessions === 1 ? '' : 's'}
          {base && (
            <>
              {' '}
              (newest:{' '}
              <a href={formatHash({ tab: 'kernels', s: base })} data-testid="reg-baseline">
                {base.slice(0, 8)}
              </a>
              )
            </>
          )}
        </span>
      </div>
      <RegTable items={s.items} bases={bases} />
    </div>
  );
}

/* A finding's value: a duration, or for peak memory bytes. */
function value(f: Regression, side: 'base' | 'cur'): string {
  if (f.subject === 'memory') {
    const v = side === 'base' ? f.base_peak_bytes : f.cur_peak_bytes;
    return v == null ? '-' : fmtBytes(v);
  }
  const v = side === 'base' ? f.base_median_ns : f.cur_median_ns;
  return v == null ? '-' : fmtNs(num(v));
}

/* Where a finding's name is looked at in one run: a kernel in the
   Kernels view (table and timeline marks filtered at it), a scope path in
   the Scopes view; peak memory in the Memory view. */
function runHref(f: Regression, session: string): string {
  const subject = f.subject ?? 'kernel';
  if (subject === 'kernel') return kernelsHref(session, f.name);
  return formatHash({ tab: subject === 'memory' ? 'memory' : 'scopes', s: session });
}

/* Findings as a table; bases: the baseline runs the scan compared with,
   newest first (the first is linked; all are drawn in a distribution). */
export function RegTable({ items, bases }: { items: Regression[]; bases: string[] }) {
  const [open, setOpen] = useState<string | null>(null);
  const base = bases[0] ?? null;
  return (
    <table className="grid" data-testid="reg-table">
      <thead>
        <tr>
          <th>kernel or scope</th>
          <th>what</th>
          <th>kind</th>
          <th className="num">baseline median</th>
          <th className="num">this run</th>
          <th className="num">ratio (95 % interval)</th>
          <th className="num">p</th>
          <th className="num">calls (baseline mean → this run)</th>
          <th>timelines at this kernel</th>
          <th>distributions</th>
        </tr>
      </thead>
      <tbody>
        {items.flatMap((f) => {
          const key = (f.subject ?? 'kernel') + ' ' + f.kind + ' ' + f.name;
          const canDist = f.subject !== 'memory' && f.kind !== 'vanished' && bases.length > 0;
          const row = (
            <tr
              key={key}
              data-testid="reg-row"
              data-kind={f.kind}
              data-subject={f.subject ?? 'kernel'}
              data-name={f.name}
              title={describe(f)}
            >
              <td className="name" data-testid="reg-name">
                {f.name}
              </td>
              <td data-testid="reg-subject">{f.subject ?? 'kernel'}</td>
              <td>
                <Badge kind={'reg-' + f.kind}>{f.kind}</Badge>
              </td>
              <td className="num" data-testid="reg-base">
                {value(f, 'base')}
              </td>
              <td className="num" data-testid="reg-cur">
                {value(f, 'cur')}
              </td>
              <td
                className={'num ' + (f.kind === 'slower' ? 'worse' : f.kind === 'faster' ? 'better' : '')}
                data-testid="reg-ratio"
              >
                {f.subject === 'memory'
                  ? f.ratio === null
                    ? '-'
                    : 'x' + f.ratio.toFixed(3)
                  : fmtRatio(f.ratio, f.lo, f.hi)}
              </td>
              <td className="num" data-testid="reg-p">
                {fmtP(f.p)}
              </td>
              <td className="num" data-testid="reg-counts">
                {fmtCount(f.base_count)} → {Number(f.cur_count)}
              </td>
              <td>
                <a href={runHref(f, f.session)} data-testid="reg-link-cur">
                  this run
                </a>
                {base && (
                  <>
                    {' · '}
                    <a href={runHref(f, base)} data-testid="reg-link-base">
                      baseline
                    </a>
                  </>
                )}
              </td>
              <td>
                {canDist && (
                  <button
                    className="link"
                    data-testid="reg-dist-toggle"
                    onClick={() => setOpen((o) => (o === key ? null : key))}
                  >
                    {open === key ? 'hide' : 'show'}
                  </button>
                )}
              </td>
            </tr>
          );
          if (open !== key) return [row];
          return [
            row,
            <tr key={key + ' dist'} className="regdist-row">
              <td colSpan={10}>
                <RegDist f={f} bases={bases} />
              </td>
            </tr>,
          ];
        })}
      </tbody>
    </table>
  );
}

const DIST_W = 640;
const DIST_H = 140;

/* Both distributions of a finding on one log axis: the share of each
   bin among the baseline runs' values (each run weighs the same) and
   among this run's, drawn side by side in each bin; from each session's
   GET …/durations, the values the scan compared. */
export function RegDist({ f, bases }: { f: Regression; bases: string[] }) {
  const [sets, setSets] = useState<{ base: number[][]; cur: number[] } | null>(null);
  const [error, setError] = useState<unknown>(null);
  // the runs as one string: a parent's new array of the same runs must
  // not read them all again
  const ids = [f.session, ...bases].join(',');
  const { name, subject } = f;
  useEffect(() => {
    const ac = new AbortController();
    const which = { name, subject };
    setSets(null);
    setError(null);
    Promise.all(ids.split(',').map((id) => api<Durations>('sessions/' + id + '/durations', {}, ac.signal)))
      .then((ds) => setSets({ cur: valuesOf(ds[0], which), base: ds.slice(1).map((d) => valuesOf(d, which)) }))
      .catch((e) => {
        if (!ac.signal.aborted) setError(e);
      });
    return () => ac.abort();
  }, [ids, name, subject]);
  if (error) return <ErrorBox error={error} what="reading the durations" />;
  if (!sets) return <Loading what="durations" />;
  const d = distributions(sets.base, sets.cur);
  if (!d) return <Empty>No durations of {f.name} in one of the runs.</Empty>;
  const nb = d.base.length;
  const top = Math.max(...d.base, ...d.cur) || 1;
  const bw = DIST_W / nb;
  const y = (v: number) => DIST_H - 16 - (v / top) * (DIST_H - 24);
  const ticks = [0, Math.floor(nb / 4), Math.floor(nb / 2), Math.floor((3 * nb) / 4), nb];
  return (
    <div className="regdist" data-testid="reg-dist" data-base-runs={sets.base.length} data-cur-n={sets.cur.length}>
      <svg width={DIST_W} height={DIST_H} role="img" aria-label={'distributions of ' + f.name}>
        {d.base.map((v, i) => (
          <rect
            key={'b' + i}
            data-testid="reg-dist-base"
            data-share={v.toFixed(4)}
            x={i * bw + 1}
            y={y(v)}
            width={bw / 2 - 1}
            height={DIST_H - 16 - y(v)}
            className="dist-base"
          >
            <title>
              baseline runs: {(v * 100).toFixed(1)} % of values in {fmtNs(d.edges[i])} - {fmtNs(d.edges[i + 1])}
            </title>
          </rect>
        ))}
        {d.cur.map((v, i) => (
          <rect
            key={'c' + i}
            data-testid="reg-dist-cur"
            data-share={v.toFixed(4)}
            x={i * bw + bw / 2}
            y={y(v)}
            width={bw / 2 - 1}
            height={DIST_H - 16 - y(v)}
            className="dist-cur"
          >
            <title>
              this run: {(v * 100).toFixed(1)} % of values in {fmtNs(d.edges[i])} - {fmtNs(d.edges[i + 1])}
            </title>
          </rect>
        ))}
        {ticks.map((i) => (
          <text
            key={'t' + i}
            x={i === nb ? DIST_W - 2 : i * bw}
            y={DIST_H - 2}
            className="axis"
            textAnchor={i === nb ? 'end' : 'start'}
          >
            {fmtNs(d.edges[i])}
          </text>
        ))}
      </svg>
      <div className="dim">
        <span className="swatch dist-base" /> {sets.base.length} baseline run{sets.base.length === 1 ? '' : 's'} (
        {bases.map((b) => b.slice(0, 8)).join(', ')}) · <span className="swatch dist-cur" /> this run ({sets.cur.length}{' '}
        values) · log axis, share of each side&apos;s values per bin
      </div>
    </div>
  );
}

/* The session header's part: what the regression scan found for this
   session (GET /sessions/{id}/regressions): a button in the header line,
   and the findings under it when opened. */
export function SessionRegs({ session }: { session: Session }) {
  const [open, setOpen] = useState(false);
  const ended = session.state === 'ended';
  const r = useApi<SessionRegressions>(ended ? 'sessions/' + session.id + '/regressions' : null, {}, [
    session.id,
    ended,
  ]);
  const n = r.data ? r.data.items.length : 0;
  const others = useApi<Page<Session>>(
    open && n ? 'sessions' : null,
    { app: session.app, state: 'ended', limit: 500 },
    [open, n, session.app],
  );
  if (!ended || !r.data) return null;
  const slower = r.data.items.filter((f) => f.kind === 'slower').length;
  const nb = r.data?.items[0] ? Number(r.data.items[0].base_sessions) : 0;
  const bases = others.data
    ? baselinesOf(others.data.items, { session: session.id, start_ns: session.start_ns }, nb, session)
    : [];
  const label = !r.data.scanned
    ? 'not compared yet'
    : n === 0
      ? 'no change vs baseline'
      : n + ' change' + (n > 1 ? 's' : '') + ' vs baseline' + (slower ? ' (' + slower + ' slower)' : '');
  return (
    <>
      <button
        className={'link badge ' + (slower ? 'b-reg-slower' : 'b-ended')}
        data-testid="session-regs"
        data-n={n}
        disabled={!n}
        onClick={() => setOpen((o) => !o)}
        title={
          r.data.scanned
            ? 'what the regression scan found for this session against the last ended sessions of ' +
              session.app +
              (n ? ': click to show or hide' : '')
            : 'the scan runs a few seconds after the session ends (docs/analysis.md)'
        }
      >
        {label} {n ? (open ? '▴' : '▾') : ''}
      </button>
      {open && n > 0 && (
        <div className="sessregs" data-testid="session-regs-panel">
          <RegTable items={r.data.items} bases={bases} />
        </div>
      )}
    </>
  );
}
