import { useEffect, useMemo, useRef, useState } from 'react';
import uPlot from 'uplot';
import type { ViewProps } from '../App';
import { big } from '../lib/api';
import { align, FAMILIES, Family, SysSeries } from '../lib/series';
import { Badge, Empty, ErrorBox, Loading, useApi } from './common';
import { testHooks } from '../lib/testHooks';

const COLORS = ['#4e9af1', '#f1a54e', '#5fd08a', '#e0607e', '#b48ef0', '#e8d35b', '#55c7d6', '#c0c0c0'];

/* Tick labels with as many decimals as the tick step needs. */
function secs(incr: number): (u: uPlot, v: number[]) => string[] {
  const d = Math.max(0, Math.min(9, -Math.floor(Math.log10(incr || 1))));
  return (_u, v) => v.map((x) => x.toFixed(d) + ' s');
}

function Chart({
  fam,
  series,
  base,
  onZoom,
  width,
  syncKey,
  range,
}: {
  fam: Family;
  series: SysSeries[];
  base: bigint;
  onZoom: (a: number, b: number) => void;
  width: number;
  syncKey: string;
  range: [number, number];
}) {
  const el = useRef<HTMLDivElement>(null);
  const zoomCb = useRef(onZoom);
  zoomCb.current = onZoom;
  const { labels, data } = useMemo(() => align(series, fam, base, null), [series, fam, base]);
  const [r0, r1] = range;
  useEffect(() => {
    if (!el.current || !labels.length) return;
    const opts: uPlot.Options = {
      width,
      height: 170,
      title: fam.title + ' (' + fam.unit + ')',
      // every chart shows the same x range: the zoom range, else the session
      scales: { x: { time: false, range: () => [r0, r1] } },
      cursor: { sync: { key: syncKey }, drag: { x: true, y: false } },
      axes: [
        {
          stroke: '#8b94a3',
          grid: { stroke: '#232833' },
          ticks: { stroke: '#232833' },
          values: (u, v, _a, _s, incr) => secs(incr)(u, v),
        },
        { stroke: '#8b94a3', grid: { stroke: '#232833' }, ticks: { stroke: '#232833' }, size: 60 },
      ],
      series: [
        { label: 't (s)' },
        ...labels.map((l, i) => ({
          label: l,
          stroke: COLORS[i % COLORS.length],
          width: 1.5,
          spanGaps: true,
          points: { show: data[0].length < 60 },
        })),
      ],
      hooks: {
        setSelect: [
          (u: uPlot) => {
            if (u.select.width < 2) return;
            const a = u.posToVal(u.select.left, 'x');
            const b = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            zoomCb.current(a, b);
          },
        ],
      },
    };
    const plot = new uPlot(opts, data as uPlot.AlignedData, el.current);
    return () => plot.destroy();
  }, [labels, data, width, fam, syncKey, r0, r1]);
  if (!labels.length) return null;
  return <div className="chart" data-testid={'chart-' + fam.id} ref={el} />;
}

export function SystemView({ st, set, session }: ViewProps) {
  const s = session!;
  const base = big(s.first_ts);
  const running = s.state === 'running';
  const [tick, setTick] = useState(0);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [srcOff, setSrcOff] = useState<Set<string>>(new Set());
  const [live, setLive] = useState(running);
  const wrap = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(900);
  useEffect(() => {
    const ro = new ResizeObserver(() => setWidth(Math.max(300, (wrap.current?.clientWidth ?? 900) - 10)));
    if (wrap.current) ro.observe(wrap.current);
    return () => ro.disconnect();
  }, []);
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => setTick((x) => x + 1), 5000);
    return () => clearInterval(t);
  }, [live]);
  const r = useApi<{ series: SysSeries[]; bucket_ns: number }>(
    'sessions/' + s.id + '/system',
    { from: st.from, to: st.to, points: Math.min(5000, Math.round(width / 2)) },
    [st.from, st.to, tick, width],
  );
  const series = useMemo(() => (r.data?.series ?? []).filter((x) => !srcOff.has(x.src)), [r.data, srcOff]);
  const span = Number(big(s.last_ts) - base) / 1e9;
  const range: [number, number] =
    st.from && st.to ? [Number(big(st.from) - base) / 1e9, Number(big(st.to) - base) / 1e9] : [0, Math.max(span, 1e-6)];
  // a running session's charts follow its end (the range grows with the
  // span the App refreshes every 5 s) until the user zooms in
  const following = live && !st.from;
  useEffect(() => {
    testHooks.set('system', { r0: range[0], r1: range[1], live: following });
  });
  const zoomTo = (a: number, b: number) => {
    const f = base + BigInt(Math.max(0, Math.floor(a * 1e9)));
    const t = base + BigInt(Math.ceil(b * 1e9));
    if (t > f) set({ ...st, from: f.toString(), to: t.toString() });
  };
  const fams = FAMILIES.filter(
    (f) =>
      !hidden.has(f.id) &&
      (r.data?.series ?? []).some((x) => x.points.some((p) => f.fields.some((k) => Array.isArray(p[k])))),
  );
  const present = FAMILIES.filter((f) =>
    (r.data?.series ?? []).some((x) => x.points.some((p) => f.fields.some((k) => Array.isArray(p[k])))),
  );
  return (
    <div className="system" data-testid="view-system" ref={wrap}>
      <div className="toolbar">
        {running ? (
          <label>
            <input type="checkbox" data-testid="live" checked={live} onChange={(e) => setLive(e.target.checked)} /> live
            refresh (5 s)
          </label>
        ) : (
          <span className="dim">session {s.state}: no live refresh</span>
        )}
        {live && <Badge kind="running">LIVE</Badge>}
        {live && (
          <span className="dim" data-testid="sys-follow">
            {following ? 'following the end of the session' : 'zoomed: not following'}
          </span>
        )}
        {s.simulated && <Badge kind="simulated">simulated GPU samples</Badge>}
        <button
          data-testid="sys-reset"
          disabled={!st.from}
          onClick={() => set({ ...st, from: undefined, to: undefined })}
        >
          Whole session
        </button>
        <span className="dim">drag across a chart to zoom all of them (the range is shared with Kernels)</span>
      </div>
      <div className="toolbar toggles">
        {(r.data?.series ?? []).map((x) => (
          <label key={x.src}>
            <input
              type="checkbox"
              checked={!srcOff.has(x.src)}
              onChange={() =>
                setSrcOff((o) => {
                  const n = new Set(o);
                  if (n.has(x.src)) n.delete(x.src);
                  else n.add(x.src);
                  return n;
                })
              }
            />{' '}
            {x.src}
          </label>
        ))}
        <span className="sep" />
        {present.map((f) => (
          <label key={f.id}>
            <input
              type="checkbox"
              data-testid={'toggle-' + f.id}
              checked={!hidden.has(f.id)}
              onChange={() =>
                setHidden((o) => {
                  const n = new Set(o);
                  if (n.has(f.id)) n.delete(f.id);
                  else n.add(f.id);
                  return n;
                })
              }
            />{' '}
            {f.title}
          </label>
        ))}
      </div>
      {r.error ? <ErrorBox error={r.error} what="loading system samples" /> : null}
      {!r.data && !r.error && <Loading what="system samples" />}
      {r.data && !r.data.series.length && (
        <Empty>
          No GPU or host samples in this {st.from ? 'range; zoom out' : 'session'}. Samples are written every{' '}
          <code>GPUFL_SYSTEM_INTERVAL_MS</code> (this session: {String(s.interval_ms ?? '?')} ms; 0 = off) by the nvml /
          sim / host engines.
        </Empty>
      )}
      {fams.map((f) => (
        <Chart
          key={f.id}
          fam={f}
          series={series}
          base={base}
          onZoom={zoomTo}
          width={width}
          syncKey={'gpufl-' + s.id}
          range={range}
        />
      ))}
    </div>
  );
}
