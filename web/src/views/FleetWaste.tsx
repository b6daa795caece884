// FleetWaste.tsx - the Fleet page's waste panels (GET /api/v1/fleet/waste,
// docs/ui.md "Fleet"): GPUs by verdict and the waste rate now, wasted
// GPU-hours over time stacked by reason, the top wasters by user,
// namespace, job, pod, app, host or GPU, and each GPU's verdict history as
// a strip of colour, with a drill-down from a GPU to its host's sessions.
// The shaping is lib/waste.ts; this file only draws it.
import { useMemo, useState } from 'react';
import type { Page, Session } from '../lib/types';
import { fmtPct, fmtWall } from '../lib/format';
import { formatHash } from '../lib/url';
import { jobLabel } from '../lib/jobs';
import {
  BYS,
  fmtCost,
  fmtGpuH,
  fmtRate,
  gpuOfKey,
  isEmptyWaste,
  ownerLabel,
  RANGES,
  rangeOf,
  REASON_COLOR,
  REASON_LABEL,
  REASONS,
  sortGpus,
  sortTop,
  stackChart,
  stateColor,
  statesSummary,
  stripLayout,
  stripStates,
  timeTicks,
  topHref,
  wasteShare,
  type TopKey,
  type WasteAnswer,
  type WasteBy,
  type WasteGpu,
} from '../lib/waste';
import { Badge, Empty, ErrorBox, Loading, Th, useApi } from './common';

const BY_LABEL: Record<WasteBy, string> = {
  user: 'user',
  namespace: 'namespace',
  job: 'job',
  pod: 'pod',
  app: 'app',
  host: 'host',
  gpu: 'GPU',
};
// the server's limit counts both the owners in top and the GPUs in gpus
const LIMIT = 100;
const TOP_ROWS = 20;
// the plots' drawing size (SVG units; the SVG scales to the page's width)
const CW = 1100;
const CH = 180;
const PAD_L = 56;
const PAD_B = 20;
const PAD_T = 8;
const SW = CW - PAD_L;

function Swatch({ color }: { color: string }) {
  return <span className="swatch" style={{ background: color }} />;
}

export function FleetWaste({ tick }: { tick: number }) {
  const [ri, setRi] = useState(2);
  const [by, setBy] = useState<WasteBy>('user');
  const [sort, setSort] = useState<[string, boolean]>(['wasted', true]);
  const [sel, setSel] = useState<string | null>(null);
  const R = RANGES[ri];
  // the range ends on a step boundary: a refresh tick inside the same step
  // asks the same question
  // eslint-disable-next-line react-hooks/exhaustive-deps -- tick stands for "now": a new range each refresh
  const rg = useMemo(() => rangeOf(R.s, R.step, Date.now()), [R.s, R.step, tick]);
  const r = useApi<WasteAnswer>('fleet/waste', { by, from: rg.from, to: rg.to, step: rg.step, limit: LIMIT }, [
    by,
    rg.from,
    rg.to,
    rg.step,
  ]);
  const a = r.data;

  return (
    <section className="waste" data-testid="waste">
      <div className="toolbar">
        <b>GPU waste</b>
        <select
          data-testid="waste-range"
          value={ri}
          onChange={(e) => {
            setRi(Number(e.target.value));
            setSel(null);
          }}
        >
          {RANGES.map((x, i) => (
            <option key={x.s} value={i}>
              {x.label}
            </option>
          ))}
        </select>
        <label>
          top wasters by{' '}
          <select data-testid="waste-by" value={by} onChange={(e) => setBy(e.target.value as WasteBy)}>
            {BYS.map((b) => (
              <option key={b} value={b}>
                {BY_LABEL[b]}
              </option>
            ))}
          </select>
        </label>
        {a?.simulated && (
          <span data-testid="waste-simulated" title="the verdicts counted here came from a simulated GPU">
            <Badge kind="simulated">simulated</Badge> GPUs and verdicts from a simulated NVML, not real hardware
          </span>
        )}
        {r.loading && <span className="dim">loading…</span>}
      </div>
      {r.error ? (
        <ErrorBox
          error={r.error}
          what="loading GPU waste (GET /api/v1/fleet/waste; this server may not have the waste accounting yet)"
        />
      ) : null}
      {!a && !r.error && <Loading what="GPU waste" />}
      {a && isEmptyWaste(a) && (
        <Empty>
          No GPU waste data in this range. Run <code>gpufl idle watch --log-dir DIR</code> on each GPU host and ship DIR
          with <code>gpufl-agent --folder=DIR --url=http://THIS-SERVER/api/v1/events/</code>: the server counts busy and
          wasted GPU-hours from its verdicts.
        </Empty>
      )}
      {a && !isEmptyWaste(a) && (
        <>
          <Header a={a} />
          <Chart a={a} />
          <Top a={a} sort={sort} setSort={setSort} setSel={setSel} />
          <Strips a={a} sel={sel} setSel={setSel} />
          {sel && <Drill a={a} gpuKey={sel} />}
        </>
      )}
    </section>
  );
}

function Header({ a }: { a: WasteAnswer }) {
  const st = statesSummary(a.now?.gpus_by_state ?? {});
  const t = a.totals;
  const share = wasteShare(t.busy_gpu_h, t.wasted_gpu_h);
  return (
    <div className="waste-header" data-testid="waste-header">
      <div className="waste-now">
        <span className="dim">now:</span> <b data-testid="waste-gpus">{st.total}</b> GPU{st.total === 1 ? '' : 's'}
        {st.items.map(([s, n]) => (
          <span key={s} className="chip" data-testid="waste-state" data-state={s} data-n={n}>
            <Swatch color={stateColor(s)} /> {s} {n}
          </span>
        ))}
        <span className="waste-rate" data-testid="waste-rate" data-v={a.now?.waste_rate ?? ''}>
          waste rate <b>{fmtRate(a.now?.waste_rate)}</b>{' '}
          <span className="dim">(wasted GPU-seconds per second, last 5 min)</span>
        </span>
      </div>
      <div className="waste-totals" data-testid="waste-totals">
        <span>
          busy <b data-testid="waste-busy">{fmtGpuH(t.busy_gpu_h)}</b>
        </span>
        <span>
          wasted <b data-testid="waste-wasted">{fmtGpuH(t.wasted_gpu_h)}</b>
          {share !== null && <span className="dim"> ({fmtPct(share)} of the GPU-hours seen)</span>}
        </span>
        {t.cost !== null && t.cost !== undefined ? (
          <span>
            cost of the waste <b data-testid="waste-cost">{fmtCost(t.cost, a.currency)}</b>
          </span>
        ) : (
          <span className="dim" data-testid="waste-noprice">
            no price configured: GPU-hours only (start the server with <code>--price MODEL=USD_PER_HOUR</code> to see
            money)
          </span>
        )}
        <span className="dim">
          {fmtWall(a.from)} – {fmtWall(a.to)}
        </span>
      </div>
    </div>
  );
}

function Chart({ a }: { a: WasteAnswer }) {
  const plotH = CH - PAD_B - PAD_T;
  const c = useMemo(() => stackChart(a.series, a.from, a.to, a.step_s, SW, plotH), [a, plotH]);
  const ticks = useMemo(() => timeTicks(a.from, a.to, SW), [a]);
  const stepLabel = a.step_s >= 3600 ? a.step_s / 3600 + ' h' : a.step_s / 60 + ' min';
  return (
    <div className="waste-chart">
      <div className="dim">Wasted GPU-hours per {stepLabel}, by reason</div>
      <svg viewBox={`0 0 ${CW} ${CH}`} width="100%" data-testid="waste-chart" data-ymax={c.yMax}>
        <g transform={`translate(${PAD_L},${PAD_T})`}>
          {c.ticks.map((k) => (
            <g key={k.v}>
              <line x1={0} x2={SW} y1={k.y} y2={k.y} className="gridline" />
              <text x={-4} y={k.y + 4} textAnchor="end" className="axis">
                {+k.v.toPrecision(3)}
              </text>
            </g>
          ))}
          {c.rects.map((x) => (
            <rect
              key={x.t + x.reason}
              x={x.x}
              y={x.y}
              width={Math.max(0.5, x.w - 0.5)}
              height={x.h}
              fill={REASON_COLOR[x.reason]}
              data-testid="waste-bar"
              data-t={x.t}
              data-reason={x.reason}
              data-v={x.value}
            >
              <title>
                {fmtWall(x.t)}: {REASON_LABEL[x.reason]} {fmtGpuH(x.value)}
              </title>
            </rect>
          ))}
          {ticks.map((k, i) => (
            <text
              key={i}
              x={k.x}
              y={CH - PAD_T - 4}
              className="axis"
              textAnchor={i === 0 ? 'start' : i === ticks.length - 1 ? 'end' : 'middle'}
            >
              {k.label}
            </text>
          ))}
        </g>
      </svg>
      <div className="legend" data-testid="waste-legend">
        {REASONS.map((k) => (
          <span
            key={k}
            className="chip"
            data-testid="waste-reason"
            data-reason={k}
            data-v={a.totals.by_reason?.[k] ?? 0}
          >
            <Swatch color={REASON_COLOR[k]} /> {REASON_LABEL[k]} {fmtGpuH(a.totals.by_reason?.[k] ?? 0)}
          </span>
        ))}
        <span className="dim">(times UTC)</span>
      </div>
    </div>
  );
}

function Top({
  a,
  sort,
  setSort,
  setSel,
}: {
  a: WasteAnswer;
  sort: [string, boolean];
  setSort: (s: [string, boolean]) => void;
  setSel: (k: string | null) => void;
}) {
  const [all, setAll] = useState(false);
  const sorted = useMemo(() => sortTop(a.top ?? [], sort[0] as TopKey, sort[1]), [a, sort]);
  const rows = all ? sorted : sorted.slice(0, TOP_ROWS);
  const noPrice = a.totals.cost === null || a.totals.cost === undefined;
  const by = (BYS as readonly string[]).includes(a.by) ? BY_LABEL[a.by as WasteBy] : a.by;
  return (
    <div className="waste-top">
      <div className="dim">
        Top wasters by {by}: {rows.length} of the {sorted.length} the server sent (most wasted GPU-hours first; click a
        header to sort)
      </div>
      {rows.length === 0 ? (
        <Empty>No {by} was charged GPU-hours in this range.</Empty>
      ) : (
        <table className="grid" data-testid="waste-top">
          <thead>
            <tr>
              <Th k="key" sort={sort} setSort={setSort}>
                {by}
              </Th>
              <Th k="busy" sort={sort} setSort={setSort} num>
                busy
              </Th>
              <Th k="wasted" sort={sort} setSort={setSort} num>
                wasted
              </Th>
              <Th k="share" sort={sort} setSort={setSort} num>
                wasted share
              </Th>
              <th>by reason</th>
              <Th k="cost" sort={sort} setSort={setSort} num>
                cost
              </Th>
            </tr>
          </thead>
          <tbody>
            {rows.map((x) => {
              const href = topHref(a.by, x.key);
              const gpu = a.by === 'gpu' ? gpuOfKey(a.gpus, x.key) : null;
              const share = wasteShare(x.busy_gpu_h, x.wasted_gpu_h);
              return (
                <tr key={x.key} data-testid="waste-top-row" data-key={x.key}>
                  <td>
                    {href ? (
                      <a href={href}>{x.key}</a>
                    ) : gpu ? (
                      <a
                        href="#"
                        title="show this GPU's sessions below"
                        onClick={(e) => {
                          e.preventDefault();
                          setSel(gpuKey(gpu));
                        }}
                      >
                        {x.key}{' '}
                        <span className="dim">
                          ({gpu.host} GPU {gpu.dev})
                        </span>
                      </a>
                    ) : (
                      <span className={x.key === '' ? 'dim' : ''}>{ownerLabel(x.key)}</span>
                    )}
                  </td>
                  <td className="num" data-testid="waste-top-busy">
                    {fmtGpuH(x.busy_gpu_h)}
                  </td>
                  <td className="num" data-testid="waste-top-wasted">
                    {fmtGpuH(x.wasted_gpu_h)}
                  </td>
                  <td className="num">{share === null ? '-' : fmtPct(share)}</td>
                  <td>
                    <span className="reasonbar" title={reasonText(x.by_reason)}>
                      {REASONS.map((k) =>
                        x.by_reason?.[k] && x.wasted_gpu_h > 0 ? (
                          <span
                            key={k}
                            style={{
                              width: (100 * (x.by_reason[k] ?? 0)) / x.wasted_gpu_h + '%',
                              background: REASON_COLOR[k],
                            }}
                          />
                        ) : null,
                      )}
                    </span>
                  </td>
                  <td className="num" data-testid="waste-top-cost">
                    {fmtCost(x.cost, a.currency)}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {sorted.length > TOP_ROWS && (
        <button data-testid="waste-top-all" onClick={() => setAll(!all)}>
          {all ? 'Show the top ' + TOP_ROWS : 'Show all ' + sorted.length}
        </button>
      )}
      {noPrice && rows.length > 0 && (
        <div className="dim">
          Cost: no price configured (<code>gpufl-server --price MODEL=USD_PER_HOUR</code>).
        </div>
      )}
    </div>
  );
}

function reasonText(r: WasteAnswer['totals']['by_reason'] | undefined): string {
  return REASONS.filter((k) => r?.[k])
    .map((k) => REASON_LABEL[k] + ' ' + fmtGpuH(r?.[k]))
    .join(', ');
}

const gpuKey = (g: WasteGpu) => g.host + ':' + g.dev;

function Strips({ a, sel, setSel }: { a: WasteAnswer; sel: string | null; setSel: (k: string | null) => void }) {
  const gpus = useMemo(() => sortGpus(a.gpus ?? [], a.from, a.to), [a]);
  const states = useMemo(() => stripStates(a.gpus ?? []), [a]);
  const ticks = useMemo(() => timeTicks(a.from, a.to, SW), [a]);
  if (!gpus.length) return null;
  return (
    <div className="waste-strips">
      <div className="dim">
        Verdict history per GPU (most wasted first
        {gpus.length >= LIMIT ? '; the server sends the first ' + LIMIT + ' GPUs by host and index' : ''}; blank: no
        verdict seen). Click a GPU for its sessions.
      </div>
      <div className="legend" data-testid="strip-legend">
        {states.map((s) => (
          <span key={s} className="chip" data-state={s}>
            <Swatch color={stateColor(s)} /> {s}
          </span>
        ))}
      </div>
      <div className="strip-rows" data-testid="waste-gpus">
        {gpus.map((g) => {
          const px = stripLayout(g.strip, a.from, a.to, SW);
          const k = gpuKey(g);
          return (
            <div
              key={k}
              className={'strip-row' + (sel === k ? ' sel' : '')}
              data-testid="waste-gpu"
              data-host={g.host}
              data-dev={g.dev}
              onClick={() => setSel(sel === k ? null : k)}
              title={(g.model ?? '') + (g.uuid ? ' ' + g.uuid : '')}
            >
              <span className="strip-label">
                {g.host} <span className="dim">GPU {g.dev}</span>
              </span>
              <svg viewBox={`0 0 ${SW} 14`} preserveAspectRatio="none" className="strip">
                <rect x={0} y={0} width={SW} height={14} className="strip-bg" />
                {px.map((s) => (
                  <rect
                    key={s.x}
                    x={s.x}
                    y={0}
                    width={s.w}
                    height={14}
                    fill={stateColor(s.state)}
                    data-testid="strip-seg"
                    data-state={s.state}
                    data-from={s.from}
                    data-to={s.to}
                  >
                    <title>
                      {s.state}: {fmtWall(s.from)} – {fmtWall(s.to)}
                    </title>
                  </rect>
                ))}
              </svg>
            </div>
          );
        })}
        <div className="strip-row axis-row">
          <span className="strip-label" />
          <span className="strip-axis">
            {ticks.map((k, i) => (
              <span key={i} style={{ left: (100 * k.x) / SW + '%' }}>
                {k.label}
              </span>
            ))}
          </span>
        </div>
      </div>
    </div>
  );
}

/* A GPU's drill-down: its sessions (the host's sessions overlapping the
   range: the sessions list has no per-GPU filter), each with its job,
   timeline and memory profile. */
function Drill({ a, gpuKey: k }: { a: WasteAnswer; gpuKey: string }) {
  const g = (a.gpus ?? []).find((x) => gpuKey(x) === k);
  const host = g?.host ?? null;
  const list = useApi<Page<Session>>(
    host ? 'sessions' : null,
    { host: host ?? undefined, from: String(a.from), to: String(a.to), limit: 50 },
    [host, String(a.from), String(a.to)],
  );
  if (!g) return null;
  return (
    <div className="waste-drill" data-testid="waste-drill" data-host={g.host} data-dev={g.dev}>
      <h3>
        {g.host} GPU {g.dev} <span className="dim">{[g.model, g.uuid].filter(Boolean).join(' · ')}</span>{' '}
        <a href={formatHash({ tab: 'sessions', q: g.host })} data-testid="waste-drill-all">
          all sessions on {g.host}
        </a>
      </h3>
      <div className="dim">
        gpufl sessions on {g.host} in this range (a host&apos;s sessions: the server does not list sessions by GPU)
      </div>
      {list.error ? <ErrorBox error={list.error} what={'listing the sessions of ' + g.host} /> : null}
      {!list.data && !list.error && <Loading what="sessions" />}
      {list.data && !list.data.items.length && (
        <Empty>No gpufl session ran on {g.host} in this range (only the idle detector saw this GPU).</Empty>
      )}
      {list.data && list.data.items.length > 0 && (
        <table className="grid" data-testid="waste-drill-sessions">
          <thead>
            <tr>
              <th>session</th>
              <th>app</th>
              <th>state</th>
              <th>start</th>
              <th>job</th>
              <th>open</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((s) => (
              <tr key={s.id} data-testid="waste-drill-session" data-id={s.id}>
                <td>
                  <a href={formatHash({ tab: 'kernels', s: s.id })}>{s.id.slice(0, 8)}</a>
                </td>
                <td>{s.app}</td>
                <td>
                  <Badge kind={s.state}>{s.state}</Badge>
                </td>
                <td className="dim">{fmtWall(s.start_ns)}</td>
                <td>{s.job ? <a href={formatHash({ tab: 'jobs', job: s.job })}>{jobLabel(s) ?? s.job}</a> : '-'}</td>
                <td>
                  <a href={formatHash({ tab: 'kernels', s: s.id })}>timeline</a> ·{' '}
                  <a href={formatHash({ tab: 'system', s: s.id })}>system</a> ·{' '}
                  <a href={formatHash({ tab: 'memory', s: s.id })} data-testid="waste-drill-memory">
                    memory profile
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
