// AreaPanel.tsx - what a selected time range holds on the selected lanes
// (shift+drag on the timeline, or a click on a scope): per kernel name the
// count, total GPU time and self GPU time (the part inside the range: a
// kernel has no child slices, so Perfetto's self time is its clipped time),
// per lane the busy time, and the copies' bytes and throughput.
import { useEffect, useState } from 'react';
import { api, apiAll, num } from '../lib/api';
import { fmtBytes, fmtNs, fmtPct } from '../lib/format';
import { fmtRel, decimalsForSpan } from '../lib/time';
import { areaKernels, aggregateArea, AreaAgg, CopyAgg, aggregateCopies } from '../lib/area';
import type { TimelineTileAnswer } from '../lib/tiles';
import type { CopyItem } from '../lib/types';
import { testHooks } from '../lib/testHooks';

export interface Area {
  t0: number; // offsets, ns
  t1: number;
  lanes: string[]; // lane keys (k<dev>:<stream>, c<dev>:<kind>)
}

/* kernels read one by one at most (in windows of at most 16384) */
const AREA_MAX = 200000;
const WIN_MAX = 16384;

interface Result {
  kernels: AreaAgg | null; // null: too many to list by name
  estimate: number;
  copies: CopyAgg[];
  copiesAll: boolean; // the copies' figures cover every GPU (server aggregate)
}

export function AreaPanel({
  sid,
  base,
  area,
  onClose,
  onFit,
}: {
  sid: string;
  base: bigint;
  area: Area;
  names: Map<number, string>;
  onClose: () => void;
  onFit: () => void;
}) {
  const [res, setRes] = useState<Result | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [sort, setSort] = useState<'total' | 'self' | 'count' | 'name'>('self');
  const lanesKey = area.lanes.join(',');
  useEffect(() => {
    let live = true;
    setRes(null);
    setErr(null);
    testHooks.busy(1);
    (async () => {
      const abs = (t: number) => (base + BigInt(Math.max(0, Math.round(t)))).toString();
      const klanes = area.lanes.filter((k) => k[0] === 'k').map((k) => k.slice(1));
      let kernels: AreaAgg | null = null;
      let estimate = 0;
      if (klanes.length) {
        // one window first: exact when it holds at most 16384 kernels
        const ask = (a: number, b: number) =>
          api<TimelineTileAnswer>('sessions/' + sid + '/timeline', {
            from: abs(a),
            to: abs(b),
            width: 1,
            lanes: klanes.join(','),
            exact: WIN_MAX,
          });
        const first = await ask(area.t0, area.t1);
        estimate = first.lanes.reduce((s, l) => s + l.buckets.reduce((x, b) => x + b[1], 0), 0);
        let parts: TimelineTileAnswer[] | null = null;
        if (first.lanes.every((l) => l.exact)) parts = [first];
        else if (estimate <= AREA_MAX) {
          const n = Math.min(64, Math.ceil(estimate / (WIN_MAX * 0.6)) + 1);
          const cuts = Array.from({ length: n + 1 }, (_, i) => Math.round(area.t0 + ((area.t1 - area.t0) * i) / n));
          parts = [];
          for (let i = 0; i < n && parts; i++) {
            if (cuts[i + 1] <= cuts[i]) continue;
            const p = await ask(cuts[i], cuts[i + 1]);
            if (!live) return;
            if (p.lanes.every((l) => l.exact)) parts.push(p);
            else parts = null;
          }
        }
        if (parts) kernels = aggregateArea(areaKernels(parts, base), area.t0, area.t1);
      }
      const clanes = area.lanes.filter((k) => k[0] === 'c');
      let copies: CopyAgg[] = [];
      let copiesAll = false;
      if (clanes.length) {
        const cs = await apiAll<CopyItem>(
          'sessions/' + sid + '/copies',
          { from: abs(area.t0), to: abs(area.t1) },
          5000,
        );
        if (!cs.more) copies = aggregateCopies(cs.items, new Set(clanes));
        else {
          const p = await api<{
            aggregate: { type: string; kind: string; count: number; bytes: string; dur_ns: string }[];
          }>('sessions/' + sid + '/copies', { from: abs(area.t0), to: abs(area.t1), limit: 1 });
          copiesAll = true;
          copies = p.aggregate
            .filter((x) => x.type !== 'alloc' && x.type !== 'free')
            .map((x) => ({
              lane: 'all GPUs · ' + (x.type === 'memcpy' ? 'memcpy ' + x.kind : x.type),
              count: x.count,
              bytes: num(x.bytes),
              dur: num(x.dur_ns),
            }));
        }
      }
      if (live) setRes({ kernels, estimate, copies, copiesAll });
    })()
      .catch((e) => {
        if (live) setErr(e instanceof Error ? e.message : String(e));
      })
      .finally(() => testHooks.busy(-1));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the range and its lanes are the inputs (lanesKey stands for area.lanes)
  }, [sid, area.t0, area.t1, lanesKey]);

  const span = area.t1 - area.t0;
  const dec = decimalsForSpan(span);
  const rows = res?.kernels ? [...res.kernels.names] : [];
  rows.sort((a, b) =>
    sort === 'name'
      ? a.name < b.name
        ? -1
        : 1
      : sort === 'count'
        ? b.count - a.count
        : sort === 'total'
          ? b.total - a.total
          : b.self - a.self,
  );
  const th = (k: typeof sort, label: string, n = true) => (
    <th
      className={(n ? 'num ' : '') + 'sortable' + (sort === k ? ' on' : '')}
      onClick={() => setSort(k)}
      data-testid={'area-th-' + k}
    >
      {label}
      {sort === k ? (k === 'name' ? ' ▲' : ' ▼') : ''}
    </th>
  );
  return (
    <section className="areapanel" data-testid="area-panel" data-t0={area.t0} data-t1={area.t1}>
      <div className="toolbar">
        <b>Selection</b>
        <span data-testid="area-range">
          +{fmtRel(area.t0, dec)} → +{fmtRel(area.t1, dec)} ({fmtNs(span)}) · {area.lanes.length} lane
          {area.lanes.length === 1 ? '' : 's'}
        </span>
        <button onClick={onFit} title="F">
          Fit
        </button>
        <button onClick={onClose} data-testid="area-close" title="Esc">
          Close
        </button>
      </div>
      {err && (
        <div className="error" data-testid="error">
          Selection: {err}
        </div>
      )}
      {!res && !err && <div className="loading">Reading the kernels of the range…</div>}
      {res && res.kernels && res.kernels.count > 0 && (
        <>
          <table className="grid" data-testid="area-lanes">
            <thead>
              <tr>
                <th>lane</th>
                <th className="num">kernels</th>
                <th className="num">GPU busy in range</th>
                <th className="num">busy share</th>
              </tr>
            </thead>
            <tbody>
              {res.kernels.lanes.map((l) => (
                <tr key={l.key} data-testid="area-lane-row" data-lane={l.key}>
                  <td>{'GPU' + l.key.slice(1).replace(':', ' stream ')}</td>
                  <td className="num">{l.count}</td>
                  <td className="num">{fmtNs(l.busy)}</td>
                  <td className="num">{fmtPct(l.busy / Math.max(1, span))}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <table className="grid" data-testid="area-table">
            <thead>
              <tr>
                {th('name', 'kernel', false)}
                {th('count', 'count')}
                {th('total', 'total GPU time')}
                {th('self', 'self GPU time (in range)')}
                <th className="num">avg</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.name} data-testid="area-row" data-count={r.count} data-total={r.total} data-self={r.self}>
                  <td className="name" title={r.name}>
                    {r.name}
                  </td>
                  <td className="num">{r.count}</td>
                  <td className="num">{fmtNs(r.total)}</td>
                  <td className="num">{fmtNs(r.self)}</td>
                  <td className="num">{fmtNs(r.total / Math.max(1, r.count))}</td>
                </tr>
              ))}
              <tr className="sum" data-testid="area-sum">
                <td>all {rows.length} names</td>
                <td className="num">{res.kernels.count}</td>
                <td className="num">{fmtNs(res.kernels.total)}</td>
                <td className="num">{fmtNs(res.kernels.self)}</td>
                <td />
              </tr>
            </tbody>
          </table>
        </>
      )}
      {res && !res.kernels && res.estimate > 0 && (
        <div className="empty" data-testid="area-too-many">
          About {res.estimate.toLocaleString('en-US')} kernels in this range: more than the{' '}
          {AREA_MAX.toLocaleString('en-US')} read one by one for a selection. Select a shorter range for the breakdown
          by name.
        </div>
      )}
      {res && res.copies.length > 0 && (
        <table className="grid" data-testid="area-copies">
          <thead>
            <tr>
              <th>copies{res.copiesAll ? ' (all GPUs: over 5000 in the range)' : ''}</th>
              <th className="num">count</th>
              <th className="num">bytes</th>
              <th className="num">GPU time</th>
              <th className="num">throughput</th>
            </tr>
          </thead>
          <tbody>
            {res.copies.map((c) => (
              <tr key={c.lane} data-testid="area-copy-row" data-bytes={c.bytes}>
                <td>{c.lane}</td>
                <td className="num">{c.count}</td>
                <td className="num">{fmtBytes(c.bytes)}</td>
                <td className="num">{fmtNs(c.dur)}</td>
                <td className="num">{c.dur > 0 && c.bytes > 0 ? (c.bytes / c.dur).toFixed(2) + ' GB/s' : '-'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {res && !res.copies.length && !(res.kernels && res.kernels.count) && res.estimate === 0 && (
        <div className="empty">Nothing ran on the selected lanes in this range.</div>
      )}
    </section>
  );
}
