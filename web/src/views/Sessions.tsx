import { useMemo, useState } from 'react';
import type { ViewProps } from '../App';
import type { CompareItem, HostItem, Page, Session } from '../lib/types';
import { fmtNs, fmtWall } from '../lib/format';
import { cmpKey, compareRows, compareTotals } from '../lib/compare';
import { groupByJob, jobLabel } from '../lib/jobs';
import { formatHash } from '../lib/url';
import { dumpBadge } from '../lib/dumps';
import { Badge, Empty, ErrorBox, Loading, sortRows, Th, useApi } from './common';
import { CaptureButton, CaptureList } from './Captures';

const RANGES: [string, number][] = [
  ['any time', 0],
  ['last hour', 3600],
  ['last 24 h', 86400],
  ['last 7 days', 7 * 86400],
  ['last 30 days', 30 * 86400],
];

export function Sessions({ st, set }: ViewProps) {
  const [search, setSearch] = useState(st.q ?? '');
  const [state, setState] = useState('');
  const [host, setHost] = useState('');
  const [range, setRange] = useState(0);
  const [group, setGroup] = useState<'host' | 'app' | 'job'>('host');
  const [picked, setPicked] = useState<string[]>(st.b && st.s ? [st.s, st.b] : []);
  const from = range ? (BigInt(Date.now()) * 1000000n - BigInt(range) * 1000000000n).toString() : undefined;
  const hosts = useApi<Page<HostItem>>('hosts', { limit: 1000 }, []);
  const list = useApi<Page<Session>>('sessions', { search, state, host, from, limit: 500 }, [
    search,
    state,
    host,
    range,
  ]);

  const groups = useMemo(() => {
    if (group === 'job') return groupByJob(list.data?.items ?? []);
    const m = new Map<string, Session[]>();
    for (const s of list.data?.items ?? []) {
      const k = group === 'host' ? s.host : s.app;
      if (!m.has(k)) m.set(k, []);
      m.get(k)!.push(s);
    }
    return [...m.entries()];
  }, [list.data, group]);

  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p.slice(-1), id]));
  const open = (id: string) => set({ tab: 'kernels', s: id });

  return (
    <div className="sessions" data-testid="view-sessions">
      <div className="toolbar">
        <input
          data-testid="session-search"
          placeholder="search app, host or id"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
        />
        <select data-testid="session-state" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">any state</option>
          <option value="running">running</option>
          <option value="ended">ended</option>
          <option value="stale">stale (crashed or silent)</option>
        </select>
        <select data-testid="session-host" value={host} onChange={(e) => setHost(e.target.value)}>
          <option value="">all hosts</option>
          {(hosts.data?.items ?? []).map((h) => (
            <option key={h.host} value={h.host}>
              {h.host} ({h.sessions})
            </option>
          ))}
        </select>
        <select data-testid="session-range" value={range} onChange={(e) => setRange(Number(e.target.value))}>
          {RANGES.map(([l, v]) => (
            <option key={v} value={v}>
              {l}
            </option>
          ))}
        </select>
        <label>
          group by{' '}
          <select
            data-testid="session-group"
            value={group}
            onChange={(e) => setGroup(e.target.value as 'host' | 'app' | 'job')}
          >
            <option value="host">host</option>
            <option value="app">application</option>
            <option value="job">job (by rank)</option>
          </select>
        </label>
        <button
          data-testid="compare-btn"
          disabled={picked.length !== 2}
          onClick={() => set({ tab: 'sessions', s: picked[0], b: picked[1] })}
        >
          Compare {picked.length}/2
        </button>
      </div>
      {list.error ? <ErrorBox error={list.error} what="listing sessions" /> : null}
      {!list.data && !list.error && <Loading what="sessions" />}
      {list.data && list.data.items.length === 0 && (
        <Empty>
          No sessions{search || state || host || range ? ' match these filters; clear them to see all' : ''}. Sessions
          appear when an agent ships gpufl logs to this server (
          <code>gpufl-agent --folder=LOGDIR --url=http://THIS-SERVER/api/v1/events/</code>), or POST them to{' '}
          <code>/api/v1/events/&#123;device,scope,system&#125;</code>; try <code>make demo</code>.
        </Empty>
      )}
      {groups.map(([k, items]) => (
        <section key={k} className="group" data-testid="session-group-block" data-key={k}>
          <h3>
            {group === 'job' ? (
              k ? (
                <>
                  job{' '}
                  <a href={formatHash({ tab: 'jobs', job: k })} data-testid="group-job-link">
                    {k}
                  </a>
                </>
              ) : (
                'not in a job'
              )
            ) : (
              (group === 'host' ? 'host ' : 'app ') + k
            )}{' '}
            <span className="dim">
              · {items.length} session{items.length > 1 ? 's' : ''}
            </span>
            {group === 'host' && (
              <>
                {' '}
                <CaptureButton
                  host={k}
                  pid={null}
                  action="dump"
                  label="Dump ring windows"
                  title={
                    'Ask the agent of ' +
                    k +
                    ' to dump the flight-recorder window of every gpufl process there in ring mode (GPUFL_RECORD=ring); the dumps arrive as sessions'
                  }
                />
              </>
            )}
          </h3>
          <table className="grid">
            <thead>
              <tr>
                <th></th>
                <th>{group === 'host' ? 'app' : group === 'app' ? 'host' : 'app on host'}</th>
                <th>job · rank</th>
                <th>state</th>
                <th>started</th>
                <th className="num">span</th>
                <th className="num">kernels</th>
                <th className="num">lines</th>
                <th>session id</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.id} data-testid="session-row" data-sid={s.id} className={picked.includes(s.id) ? 'sel' : ''}>
                  <td>
                    <input
                      type="checkbox"
                      title="pick for compare"
                      data-testid="session-pick"
                      checked={picked.includes(s.id)}
                      onChange={() => toggle(s.id)}
                    />
                  </td>
                  <td>
                    <a
                      href={'#/kernels?s=' + s.id}
                      onClick={(e) => {
                        e.preventDefault();
                        open(s.id);
                      }}
                      data-testid="session-open"
                    >
                      {group === 'host' ? s.app : group === 'app' ? s.host : s.app + ' on ' + s.host}
                    </a>{' '}
                    {s.simulated && <Badge kind="simulated">simulated</Badge>}
                    {(() => {
                      const d = dumpBadge(s);
                      return d ? (
                        <span className="badge b-dump" data-testid="row-dump" title={d.title}>
                          {d.short}
                        </span>
                      ) : null;
                    })()}
                  </td>
                  <td data-testid="session-job-cell">
                    {s.job !== undefined ? (
                      <a href={formatHash({ tab: 'jobs', job: s.job })} data-testid="session-job-link">
                        {jobLabel(s)}
                      </a>
                    ) : (
                      <span className="dim">-</span>
                    )}
                  </td>
                  <td>
                    <Badge kind={s.state}>{s.state}</Badge>
                    {s.end_reason && s.state === 'ended' ? <span className="dim"> {s.end_reason}</span> : null}
                    {Number(s.missing ?? 0) > 0 ? (
                      <span
                        className="badge b-missing"
                        data-testid="row-missing"
                        title="lines the server is missing: open the session for which"
                      >
                        ⚠ {Number(s.missing).toLocaleString('en-US')} missing
                      </span>
                    ) : null}
                  </td>
                  <td>{fmtWall(s.start_ns)}</td>
                  <td className="num">{fmtNs(Number(BigInt(s.last_ts) - BigInt(s.first_ts)))}</td>
                  <td className="num">{s.counts.kernels}</td>
                  <td className="num">{s.counts.lines}</td>
                  <td>
                    <code className="dim">{s.id}</code>
                  </td>
                  <td>
                    {s.state === 'running' && (
                      <CaptureButton
                        host={s.host}
                        pid={s.pid}
                        action="trace"
                        label="Capture 30 s"
                        title={
                          'Ask the agent of ' +
                          s.host +
                          ' to turn full tracing on in pid ' +
                          s.pid +
                          ' for 30 s (gpufl ctl trace on --for 30s)'
                        }
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
      {list.data?.next && <div className="dim">Showing the newest 500; narrow the search to see older sessions.</div>}
      {st.s && st.b && <Compare a={st.s} b={st.b} />}
      <CaptureList />
    </div>
  );
}

/* The compare table's columns (CmpRow keys), each sortable. */
const CMP_COLS: [string, string][] = [
  ['name', 'kernel'],
  ['aCount', 'A count'],
  ['aAvg', 'A avg'],
  ['aTotal', 'A total'],
  ['bCount', 'B count'],
  ['bAvg', 'B avg'],
  ['bTotal', 'B total'],
  ['dTotal', 'total change'],
  ['dAvgPct', 'avg change'],
];

function Compare({ a, b }: { a: string; b: string }) {
  const r = useApi<Page<CompareItem>>('compare', { a, b, limit: 1000 }, [a, b]);
  const [sort, setSort] = useState<[string, boolean]>(['aTotal', true]);
  const rows = useMemo(() => compareRows(r.data?.items ?? []), [r.data]);
  const sorted = useMemo(() => sortRows(rows, sort[0], sort[1], cmpKey), [rows, sort]);
  const tot = useMemo(() => compareTotals(rows), [rows]);
  const pct = (d: number | null) => (d === null ? '-' : (d > 0 ? '+' : '') + d.toFixed(1) + ' %');
  const cls = (d: number | null) => (d === null ? '' : d > 10 ? 'worse' : d < -10 ? 'better' : '');
  const sgn = (v: number) => (v > 0 ? '+' : v < 0 ? '−' : '±') + fmtNs(Math.abs(v));
  return (
    <section className="compare" data-testid="compare">
      <h3>
        Compare: kernel aggregates of <code>{a.slice(0, 8)}</code> (A) and <code>{b.slice(0, 8)}</code> (B)
      </h3>
      {r.error ? <ErrorBox error={r.error} what="comparing sessions" /> : null}
      {!r.data && !r.error && <Loading what="comparison" />}
      {r.data && (
        <>
          <div className="dim" data-testid="compare-totals">
            kernel time A {fmtNs(tot.aTotal)} ({tot.aCount} calls) · B {fmtNs(tot.bTotal)} ({tot.bCount} calls) · change{' '}
            <span className={cls(tot.dPct)}>{sgn(tot.dTotal)}</span> ({pct(tot.dPct)}) · rows are recorded names:
            template instantiations are separate rows (&quot;alike&quot; marks a name shown by more than one row, with
            each one&apos;s mangled name under it) · click a header to sort
          </div>
          <table className="grid">
            <thead>
              <tr>
                {CMP_COLS.map(([k, label]) => (
                  <Th key={k} k={k} sort={sort} setSort={setSort} num={k !== 'name'}>
                    {label}
                  </Th>
                ))}
              </tr>
            </thead>
            <tbody>
              {sorted.map((it) => (
                <tr key={it.key} data-testid="compare-row" data-key={it.key}>
                  <td
                    className="name"
                    title={it.mangled && it.mangled !== it.name ? it.name + '\n\n' + it.mangled : it.name}
                  >
                    {it.name}
                    {it.alike > 1 && (
                      <>
                        {' '}
                        <span
                          className="badge b-alike"
                          data-testid="compare-shared"
                          title={it.alike + ' rows show this name: different recorded (mangled) names'}
                        >
                          {it.alike} alike
                        </span>
                        {it.mangled && (
                          <div className="dim mangled" data-testid="compare-mangled">
                            {it.mangled}
                          </div>
                        )}
                      </>
                    )}
                  </td>
                  <td className="num">{it.aCount ?? '-'}</td>
                  <td className="num">{it.aAvg === null ? '-' : fmtNs(it.aAvg)}</td>
                  <td className="num">{it.aTotal === null ? '-' : fmtNs(it.aTotal)}</td>
                  <td className="num">{it.bCount ?? '-'}</td>
                  <td className="num">{it.bAvg === null ? '-' : fmtNs(it.bAvg)}</td>
                  <td className="num">{it.bTotal === null ? '-' : fmtNs(it.bTotal)}</td>
                  <td className="num" data-testid="compare-dtotal">
                    {sgn(it.dTotal)}
                  </td>
                  <td className={'num ' + cls(it.dAvgPct)} data-testid="compare-davg">
                    {it.dAvgPct === null ? (it.aCount !== null ? 'only A' : 'only B') : pct(it.dAvgPct)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {r.data.next && <div className="dim">More kernels than listed: totals are over the listed ones.</div>}
        </>
      )}
    </section>
  );
}
