// Jobs.tsx - the jobs (sessions grouped by the job of their session line,
// docs/api.md "Jobs") and one job's page: per rank its step time (median
// and series), GPU busy share and time in collectives, the straggler
// verdict with its evidence, one timeline with a lane per rank
// (JobTimeline.tsx), and links to each rank's session.
import { useMemo, useState } from 'react';
import type { ViewProps } from '../App';
import { num } from '../lib/api';
import { fmtNs, fmtPct, fmtWall } from '../lib/format';
import { chartGeo, fmtP, fmtRatio, rankLabel, rankRows, RankRow } from '../lib/jobs';
import { formatHash } from '../lib/url';
import type { JobDetail, JobItem, Page, Straggler } from '../lib/types';
import { Badge, Empty, ErrorBox, Loading, useApi } from './common';
import { JobTimeline } from './JobTimeline';

export function Jobs(props: ViewProps) {
  return props.st.job ? <JobPage {...props} job={props.st.job} /> : <JobList {...props} />;
}

function span(a: string, b: string): string {
  const d = BigInt(b) - BigInt(a);
  return d > 0n ? fmtNs(Number(d)) : '-';
}

function JobList({ set }: ViewProps) {
  const [state, setState] = useState('');
  const list = useApi<Page<JobItem>>('jobs', { state, limit: 1000 }, [state]);
  return (
    <div data-testid="view-jobs">
      <div className="toolbar">
        <select data-testid="jobs-state" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">any state</option>
          <option value="running">running (a rank not ended)</option>
          <option value="ended">ended (every rank ended)</option>
        </select>
        <span className="hint dim">
          Sessions whose session line names a job (GPUFL_JOB, torchelastic, Slurm, MPI) are grouped here, one per rank.
        </span>
      </div>
      {list.error ? <ErrorBox error={list.error} what="listing jobs" /> : null}
      {!list.data && !list.error && <Loading what="jobs" />}
      {list.data && list.data.items.length === 0 && (
        <Empty>
          No jobs{state ? ' in this state' : ''}. A session belongs to a job when its process ran with{' '}
          <code>GPUFL_JOB</code> (and <code>GPUFL_RANK</code>, <code>GPUFL_WORLD_SIZE</code>) or under torchrun, Slurm
          or MPI; <code>gpufl demo</code> runs a 4-rank job.
        </Empty>
      )}
      {list.data && list.data.items.length > 0 && (
        <table className="grid" data-testid="jobs-table">
          <thead>
            <tr>
              <th>job</th>
              <th>app</th>
              <th className="num">ranks seen / expected</th>
              <th className="num">sessions</th>
              <th>state</th>
              <th>started</th>
              <th className="num">span</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((j) => (
              <tr key={j.job} data-testid="job-row" data-job={j.job}>
                <td>
                  <a
                    data-testid="job-open"
                    href={formatHash({ tab: 'jobs', job: j.job })}
                    onClick={(e) => {
                      e.preventDefault();
                      set({ tab: 'jobs', job: j.job });
                    }}
                  >
                    {j.job}
                  </a>
                </td>
                <td>{j.app}</td>
                <td className="num" data-testid="job-ranks">
                  {Number(j.ranks_seen)} / {j.world_size === null ? '?' : Number(j.world_size)}
                </td>
                <td className="num">{Number(j.sessions)}</td>
                <td>
                  <Badge kind={j.state}>{j.state}</Badge>
                </td>
                <td>{fmtWall(j.start_ns)}</td>
                <td className="num">{span(j.start_ns, j.last_ts)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data?.next && <div className="dim">Showing the newest 1000 jobs.</div>}
    </div>
  );
}

const PALETTE = ['#4e9af1', '#7ee2a0', '#f1c40f', '#c58af9', '#5fd3d3', '#f39c6b', '#9fb4d8', '#e6e6e6'];

function rankColor(r: RankRow, i: number): string {
  return r.straggler ? '#ff5c5c' : PALETTE[i % PALETTE.length];
}

/* Per rank: a bar of the median step time, then every rank's steps as a
   line (its x: the step's index over the rank's steps). */
function StepChart({ rows }: { rows: RankRow[] }) {
  const W = 900;
  const H = 220;
  const BAR = Math.max(14, Math.min(48, Math.floor(360 / Math.max(1, rows.length))));
  const g = useMemo(() => chartGeo(rows, W - 60, H, BAR), [rows, BAR]);
  const [hover, setHover] = useState<number | null>(null);
  if (!g.yMax) return <Empty>No step times: no rank has a repeated scope to take as its step.</Empty>;
  return (
    <>
      <svg
        className="stepchart"
        data-testid="step-chart"
        width={W}
        height={H + 22}
        viewBox={`-60 -6 ${W} ${H + 22}`}
        role="img"
        aria-label="step time per rank"
      >
        {g.ticks.map((t) => (
          <g key={t.v}>
            <line x1={0} x2={W - 60} y1={t.y} y2={t.y} stroke="#262c38" />
            <text x={-6} y={t.y + 4} textAnchor="end" fill="#8b94a3" fontSize={11}>
              {fmtNs(t.v)}
            </text>
          </g>
        ))}
        {g.bars.map((b, i) => (
          <g
            key={'b' + i}
            data-testid="step-bar"
            data-rank={b.rank ?? ''}
            data-median={b.v}
            data-compute={b.c}
            onMouseEnter={() => setHover(i)}
            onMouseLeave={() => setHover(null)}
            opacity={hover === null || hover === i ? 1 : 0.35}
          >
            <rect x={b.x} y={b.y} width={b.w} height={b.h} fill={rankColor(rows[i], i)} opacity={0.35} />
            <rect
              data-testid="step-bar-compute"
              x={b.x}
              y={b.cy}
              width={b.w}
              height={b.ch}
              fill={rankColor(rows[i], i)}
            />
            <title>
              {rankLabel(b.rank)}: median step {fmtNs(b.v)}, of which outside collectives {fmtNs(b.c)} (solid), over{' '}
              {rows[i].steps} steps
            </title>
            <text x={b.x + b.w / 2} y={H + 14} textAnchor="middle" fill="#8b94a3" fontSize={11}>
              {b.rank ?? '?'}
            </text>
          </g>
        ))}
        {g.lines.map((l, i) => (
          <path
            key={'l' + i}
            data-testid="step-line"
            data-rank={l.rank ?? ''}
            d={l.d}
            fill="none"
            stroke={rankColor(rows[i], i)}
            strokeWidth={hover === i ? 2.5 : l.straggler ? 2 : 1.2}
            opacity={hover === null || hover === i ? 1 : 0.25}
            onMouseEnter={() => setHover(i)}
            onMouseLeave={() => setHover(null)}
          >
            <title>{rankLabel(l.rank)}: each step (hover a line or bar to pick it out)</title>
          </path>
        ))}
      </svg>
      <div className="dim" data-testid="step-legend">
        Left: per rank (number under the bar) its median step time, and solid its median step time outside collectives -
        what the verdict compares. Right: each step&apos;s time over the run, one line per rank (ranks that wait for
        each other in collectives overlap). Red: a straggler. Hover a bar or a line to pick its rank out.
      </div>
    </>
  );
}

function Evidence({ s }: { s: Straggler }) {
  const extra = num(s.extra_ns);
  return (
    <div className="evidence" data-testid="straggler" data-rank={String(s.rank)}>
      <p data-testid="straggler-evidence">{s.evidence}</p>
      <table className="grid narrow">
        <tbody>
          <tr>
            <th>rank</th>
            <td data-testid="ev-rank">
              {String(s.rank)} (
              <a href={formatHash({ tab: 'kernels', s: s.session })} data-testid="ev-session">
                its timeline
              </a>
              )
            </td>
          </tr>
          <tr>
            <th>step time outside collectives over the other ranks&apos;</th>
            <td data-testid="ev-ratio">{fmtRatio(s.ratio, s.lo, s.hi)}</td>
          </tr>
          <tr>
            <th>Mann-Whitney p</th>
            <td data-testid="ev-p">{fmtP(s.p)}</td>
          </tr>
          <tr>
            <th>the other ranks&apos; own spread (noise)</th>
            <td data-testid="ev-noise">{(s.noise * 100).toFixed(1)} %</td>
          </tr>
          <tr>
            <th>extra per step against the median rank</th>
            <td data-testid="ev-extra">{fmtNs(extra)}</td>
          </tr>
          <tr>
            <th>kernel with the most extra time</th>
            <td data-testid="ev-kernel">
              {s.kernel ? (
                <>
                  <a href={formatHash({ tab: 'kernels', s: s.session, q: s.kernel })}>{s.kernel}</a> +
                  {fmtNs(num(s.kernel_extra_ns))} per step
                </>
              ) : (
                'none explains a fifth of it: the extra time is not in its GPU kernels'
              )}
            </td>
          </tr>
          <tr>
            <th>scope with the most extra time</th>
            <td data-testid="ev-scope">
              {s.scope ? (
                <>
                  <a href={formatHash({ tab: 'scopes', s: s.session })}>{s.scope}</a> +{fmtNs(num(s.scope_extra_ns))}{' '}
                  per step
                </>
              ) : (
                'none explains a fifth of it'
              )}
            </td>
          </tr>
          <tr>
            <th>the others wait for it in NCCL collectives</th>
            <td data-testid="ev-wait">
              {num(s.collective_wait_ns) > 0 ? '+' + fmtNs(num(s.collective_wait_ns)) + ' per step' : 'no'}
            </td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

function JobPage({ set, job }: ViewProps & { job: string }) {
  const r = useApi<JobDetail>('jobs/' + encodeURIComponent(job), {}, [job]);
  const rows = useMemo(() => (r.data ? rankRows(r.data) : []), [r.data]);
  const back = (
    <a
      href="#/jobs"
      data-testid="jobs-back"
      onClick={(e) => {
        e.preventDefault();
        set({ tab: 'jobs' });
      }}
    >
      ← all jobs
    </a>
  );
  if (r.error)
    return (
      <div data-testid="view-job">
        {back}
        <ErrorBox error={r.error} what={'loading job ' + job} />
      </div>
    );
  if (!r.data) return <Loading what={'job ' + job} />;
  const j = r.data;
  const median = num(j.compute_median_ns);
  return (
    <div data-testid="view-job" className="job">
      <div className="toolbar">
        {back}
        <h2 className="jobtitle">
          job <code data-testid="job-id">{j.job}</code> · {j.app} ·{' '}
          <span data-testid="job-ranks-seen">
            {Number(j.ranks_seen)} of {j.world_size === null ? '?' : Number(j.world_size)} ranks
          </span>{' '}
          <Badge kind={j.state}>{j.state}</Badge>
        </h2>
        <span className="dim">
          started {fmtWall(j.start_ns)} · span {span(j.start_ns, j.last_ts)}
        </span>
      </div>
      <section className={'verdict v-' + j.verdict.replace(/ /g, '-')} data-testid="job-verdict">
        <h3>
          Verdict: <b data-testid="verdict-text">{j.verdict}</b>
          {j.verdict === 'straggler' && (
            <>
              {' '}
              - {j.stragglers.length === 1 ? 'rank ' : 'ranks '}
              <b data-testid="verdict-ranks">{j.stragglers.map((s) => String(s.rank)).join(', ')}</b>
            </>
          )}
        </h3>
        {j.verdict === 'no straggler' && (
          <p className="dim">
            No rank&apos;s steps outside collectives are significantly longer than the other ranks&apos; (beyond their
            own spread); the job&apos;s median rank takes {fmtNs(median)} per step outside collectives.
          </p>
        )}
        {j.verdict === 'not enough steps to judge' && (
          <p className="dim">Fewer than three ranks have at least three steps of a step scope: nothing is judged.</p>
        )}
        {j.stragglers.map((s) => (
          <Evidence key={String(s.rank) + s.session} s={s} />
        ))}
      </section>
      <section>
        <h3>Timeline, one lane per rank</h3>
        <JobTimeline rows={rows} from={j.start_ns} to={j.last_ts} />
      </section>
      <section>
        <h3>Step time per rank</h3>
        <StepChart rows={rows} />
      </section>
      <section>
        <h3>Ranks</h3>
        <table className="grid" data-testid="rank-table">
          <thead>
            <tr>
              <th>rank</th>
              <th>host</th>
              <th>state</th>
              <th>step scope</th>
              <th className="num">steps</th>
              <th className="num">median step</th>
              <th className="num">median outside collectives</th>
              <th className="num">GPU busy</th>
              <th className="num">kernel time</th>
              <th className="num">in collectives</th>
              <th>session</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((x) => (
              <tr
                key={x.session}
                data-testid="rank-row"
                data-rank={x.rank ?? ''}
                data-session={x.session}
                className={x.straggler ? 'straggler' : ''}
              >
                <td>
                  {x.rank ?? '-'} {x.straggler && <Badge kind="straggler">straggler</Badge>}
                </td>
                <td>{x.host}</td>
                <td>
                  <Badge kind={x.state}>{x.state}</Badge>
                </td>
                <td>{x.stepScope ?? <span className="dim">none found</span>}</td>
                <td className="num" data-testid="rank-steps">
                  {x.steps}
                </td>
                <td className="num" data-testid="rank-median">
                  {x.stepScope ? fmtNs(x.stepMedian) : '-'}
                </td>
                <td className="num" data-testid="rank-compute">
                  {x.stepScope ? fmtNs(x.computeMedian) : '-'}
                </td>
                <td className="num" data-testid="rank-busy">
                  {fmtPct(x.busy)}
                </td>
                <td className="num">{fmtNs(x.kernelNs)}</td>
                <td className="num" data-testid="rank-coll">
                  {fmtNs(x.collectiveNs)} ({fmtPct(x.collShare)})
                </td>
                <td>
                  <a
                    data-testid="rank-open"
                    href={formatHash({ tab: 'kernels', s: x.session })}
                    title="this rank's Kernels timeline"
                  >
                    timeline
                  </a>{' '}
                  ·{' '}
                  <a href={formatHash({ tab: 'scopes', s: x.session })} title="this rank's scopes">
                    scopes
                  </a>{' '}
                  <code className="dim">{x.session.slice(0, 8)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {j.truncated && <div className="warn">More than 1024 sessions: the first 1024 by rank are shown.</div>}
      </section>
    </div>
  );
}
