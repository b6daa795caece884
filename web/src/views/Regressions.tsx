// Regressions.tsx - what the regression scan found (docs/api.md
// "Regressions"): per app, per scanned session, each kernel that got
// slower or faster (median ratio with its 95 % interval, p, baseline
// noise), is new or vanished, or changed its number of calls; with links
// to the Kernels views of the run and of its baseline run at that kernel.
import { useMemo, useState } from 'react';
import type { ViewProps } from '../App';
import { num } from '../lib/api';
import { fmtNs, fmtWall } from '../lib/format';
import { fmtP, fmtRatio } from '../lib/jobs';
import { baselineOf, describe, fmtCount, groupFindings, kernelsHref, KINDS, RegSession } from '../lib/regress';
import { formatHash } from '../lib/url';
import type { Page, Regression, Session, SessionRegressions } from '../lib/types';
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
          5); docs/analysis.md has the statistics.
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
  const base = ended.data ? baselineOf(ended.data.items, s) : null;
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
      <RegTable items={s.items} base={base} />
    </div>
  );
}

/* Findings as a table; base: the baseline run to link to (null: none). */
export function RegTable({ items, base }: { items: Regression[]; base: string | null }) {
  return (
    <table className="grid" data-testid="reg-table">
      <thead>
        <tr>
          <th>kernel</th>
          <th>kind</th>
          <th className="num">baseline median</th>
          <th className="num">this run</th>
          <th className="num">ratio (95 % interval)</th>
          <th className="num">p</th>
          <th className="num">calls (baseline mean → this run)</th>
          <th>timelines at this kernel</th>
        </tr>
      </thead>
      <tbody>
        {items.map((f) => (
          <tr key={f.kind + f.name} data-testid="reg-row" data-kind={f.kind} data-name={f.name} title={describe(f)}>
            <td className="name" data-testid="reg-name">
              {f.name}
            </td>
            <td>
              <Badge kind={'reg-' + f.kind}>{f.kind}</Badge>
            </td>
            <td className="num" data-testid="reg-base">
              {f.base_median_ns === null ? '-' : fmtNs(num(f.base_median_ns))}
            </td>
            <td className="num" data-testid="reg-cur">
              {f.cur_median_ns === null ? '-' : fmtNs(num(f.cur_median_ns))}
            </td>
            <td
              className={'num ' + (f.kind === 'slower' ? 'worse' : f.kind === 'faster' ? 'better' : '')}
              data-testid="reg-ratio"
            >
              {fmtRatio(f.ratio, f.lo, f.hi)}
            </td>
            <td className="num" data-testid="reg-p">
              {fmtP(f.p)}
            </td>
            <td className="num" data-testid="reg-counts">
              {fmtCount(f.base_count)} → {Number(f.cur_count)}
            </td>
            <td>
              <a href={kernelsHref(f.session, f.name)} data-testid="reg-link-cur">
                this run
              </a>
              {base && (
                <>
                  {' · '}
                  <a href={kernelsHref(base, f.name)} data-testid="reg-link-base">
                    baseline
                  </a>
                </>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
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
  const base = others.data
    ? baselineOf(others.data.items, { session: session.id, start_ns: session.start_ns, baseSessions: 0, items: [] })
    : null;
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
          <RegTable items={r.data.items} base={base} />
        </div>
      )}
    </>
  );
}
