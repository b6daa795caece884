// MemoryOom.tsx - the OOM reports of a session in the Memory view (gpufl
// memprof --oom, docs/api.md "OOM reports"): the list, and the one chosen
// (URL oom=ID): what was asked and from where, the device's memory, the
// live set as a flame graph, the calls of the last seconds on a timeline,
// and what PyTorch's caching allocator held and gave back.
import { useCallback, useEffect, useMemo, useRef } from 'react';
import { buildFlame, layoutFlame, Stack } from '../lib/flame';
import { fmtBytes, fmtNs, fmtWall } from '../lib/format';
import { testHooks } from '../lib/testHooks';
import type { OomAnswer, OomItem, OomReport, Page } from '../lib/types';
import type { UrlState } from '../lib/url';
import { ErrorBox, Loading, useApi } from './common';

const ROW = 16;
const TL_H = 90;

function deviceText(d: { index: number | null; free_bytes: string | null; total_bytes: string | null }): string {
  const dev = d.index === null ? 'device ?' : 'device ' + d.index;
  if (d.free_bytes === null || d.total_bytes === null) return dev;
  return dev + ': ' + fmtBytes(d.free_bytes) + ' free of ' + fmtBytes(d.total_bytes);
}

/* The live set (device memory held at the OOM, by stack) as a flame graph. */
function LiveFlame({ rep, onDraw }: { rep: OomReport; onDraw: (total: number, rects: number) => void }) {
  const cv = useRef<HTMLCanvasElement>(null);
  const wrap = useRef<HTMLDivElement>(null);
  const root = useMemo(() => {
    const st: Stack[] = rep.live.stacks.map((s) => ({ frames: rep.stacks[s.stack], bytes: s.bytes, count: s.count }));
    return buildFlame(st, 'live at the OOM');
  }, [rep]);
  useEffect(() => {
    const c = cv.current;
    if (!c) return;
    const W = Math.max(300, wrap.current?.clientWidth ?? 900);
    const rects = layoutFlame(root, root, 0.5 / W);
    const depth = rects.reduce((a, x) => Math.max(a, x.depth), 0) + 1;
    const H = depth * ROW + 2;
    const dpr = window.devicePixelRatio || 1;
    c.width = W * dpr;
    c.height = H * dpr;
    c.style.width = W + 'px';
    c.style.height = H + 'px';
    const g = c.getContext('2d')!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#12151b';
    g.fillRect(0, 0, W, H);
    g.font = '10px sans-serif';
    for (const fr of rects) {
      const x = fr.x * W;
      const w = fr.w * W;
      const y = fr.depth * ROW;
      const ca = fr.node.name.includes('CUDACachingAllocator');
      g.fillStyle = fr.node.parent === null ? '#3a4150' : ca ? '#5a7fb0' : fr.node.self > 0 ? '#c0603a' : '#a0704a';
      g.fillRect(x, y, Math.max(0.5, w - (w > 2 ? 1 : 0)), ROW - 1);
      if (w >= 24) {
        const maxc = Math.floor((w - 6) / 5.6);
        const t = fr.node.name.length > maxc ? fr.node.name.slice(0, Math.max(0, maxc - 1)) + '…' : fr.node.name;
        g.fillStyle = '#f1f3f6';
        g.fillText(t, x + 3, y + ROW - 4);
      }
    }
    onDraw(root.total, rects.length);
  }, [root, onDraw]);
  return (
    <div className="flame" ref={wrap}>
      <canvas ref={cv} data-testid="oom-flame" title="device memory the process held, by stack" />
    </div>
  );
}

/* The calls before the OOM on a time axis ending at it: allocations up,
   frees down, failures red, heights by size (log scale).  Drawn in a
   0..1000 x 0..TL_H box stretched to the width; labels are HTML. */
function Recent({ rep }: { rep: OomReport }) {
  const t1 = BigInt(rep.ts);
  const win = Number(rep.recent.window_ns);
  const ev = rep.recent.events;
  const t0 = ev.length ? Number(t1 - BigInt(ev[0].ts)) : 0;
  const span = Math.max(1, Math.min(win, t0 * 1.05 || win));
  const maxB = ev.reduce((a, e) => Math.max(a, Number(e.bytes)), 1);
  const W = 1000;
  const mid = TL_H / 2;
  const h = (b: string) => Math.max(2, (Math.log2(1 + Number(b)) / Math.log2(1 + maxB)) * (mid - 4));
  return (
    <div className="oom-tl">
      <svg
        data-testid="oom-timeline"
        viewBox={'0 0 ' + W + ' ' + TL_H}
        preserveAspectRatio="none"
        width="100%"
        height={TL_H}
      >
        <rect x={0} y={0} width={W} height={TL_H} fill="#12151b" />
        <line x1={0} x2={W} y1={mid} y2={mid} stroke="#3a4150" />
        {ev.map((e, i) => {
          const dt = Number(t1 - BigInt(e.ts));
          const x = W - 4 - (dt / span) * (W - 8);
          const y = e.op === 'free' ? mid : e.op === 'fail' ? 2 : mid - h(e.bytes);
          const hh = e.op === 'fail' ? TL_H - 4 : h(e.bytes);
          const col = e.op === 'alloc' ? '#5a7fb0' : e.op === 'free' ? '#6a9a5a' : '#d04040';
          return (
            <rect key={i} x={x - 1.5} y={y} width={3} height={hh} fill={col} data-testid="oom-event">
              <title>
                {e.op + ' ' + e.api + ' ' + fmtBytes(e.bytes) + ', ' + fmtNs(dt) + ' before the OOM\n'}
                {rep.stacks[e.stack].slice(-4).join(' ← ')}
              </title>
            </rect>
          );
        })}
      </svg>
      <div className="dim oom-axis">
        <span>{'-' + fmtNs(span)}</span>
        <span>allocations up, frees down (by the stack that allocated), failures red</span>
        <span>OOM</span>
      </div>
    </div>
  );
}

function Report({ id }: { id: string }) {
  const r = useApi<OomAnswer>('memory/ooms/' + id, {}, [id]);
  const d = r.data;
  const publish = useCallback(
    (total: number, rects: number) => {
      if (d)
        testHooks.set('oom', {
          id: d.id,
          request: d.report.stacks[d.report.request.stack],
          liveTotal: total,
          liveRects: rects,
          events: d.report.recent.events.length,
        });
    },
    [d],
  );
  const rep = d?.report;
  if (r.error) return <ErrorBox error={r.error} what={'loading OOM report ' + id} />;
  if (!rep) return <Loading what="OOM report" />;
  const req = rep.stacks[rep.request.stack];
  const fr = rep.fragmentation;
  return (
    <div className="oom-report" data-testid="oom-report">
      <h4>
        OOM report {d!.id}: {rep.comm ?? 'pid ' + rep.pid} asked {rep.request.api} for{' '}
        <span data-testid="oom-req-bytes">{fmtBytes(rep.request.bytes)}</span> at {fmtWall(rep.ts)}
      </h4>
      <div data-testid="oom-device">
        {deviceText(rep.device)} ({rep.device.source}
        {rep.device.why ? ': ' + rep.device.why : ''}
        {rep.device.process_bytes !== null ? '; the process holds ' + fmtBytes(rep.device.process_bytes) : ''}) · live
        set seen {fmtBytes(rep.live.bytes)} in {rep.live.count} blocks
        {rep.live.truncated ? ' (biggest stacks only)' : ''}
      </div>
      <div>Asked from (root first):</div>
      <ol className="oom-stack" data-testid="oom-req-stack">
        {req.map((f, i) => (
          <li key={i}>{f}</li>
        ))}
      </ol>
      {fr && (
        <div data-testid="oom-frag">
          {fr.allocator ? (
            <>
              PyTorch&apos;s caching allocator reserved {fmtBytes(fr.reserved_bytes)} (other device memory{' '}
              {fmtBytes(fr.other_bytes)}); after the OOM it gave back {fmtBytes(fr.released_allocator_bytes)} of cached
              segments, {fmtBytes(fr.held_bytes)} stay held by segments with live tensors.
            </>
          ) : (
            <>No caching allocator frames; after the OOM the process freed {fmtBytes(fr.released_bytes)}.</>
          )}{' '}
          Retries: {fr.retries.length ? fr.retries.map((x) => (x.ok ? 'succeeded' : 'failed')).join(', ') : 'none seen'}
          {fr.exited ? ' · the process ended' : ''}
        </div>
      )}
      <h4>Device memory held at the OOM, by stack</h4>
      <LiveFlame rep={rep} onDraw={publish} />
      <h4>
        Calls of the last {fmtNs(rep.recent.window_ns)} ({rep.recent.events.length}
        {rep.recent.cut ? ', the oldest dropped' : ''})
      </h4>
      <Recent rep={rep} />
    </div>
  );
}

export function OomReports({
  sid,
  st,
  set,
}: {
  sid: string;
  st: UrlState;
  set: (s: UrlState, replace?: boolean) => void;
}) {
  const l = useApi<Page<OomItem>>('memory/ooms', { sid, limit: 100 }, [sid]);
  if (l.error)
    return (
      <ErrorBox
        error={l.error}
        what={'loading the OOM reports (GET /api/v1/memory/ooms); this server may not have that endpoint yet'}
      />
    );
  if (!l.data || !l.data.items.length) return null;
  return (
    <div className="oom" data-testid="oom-reports">
      <h4>Out-of-memory reports of this session</h4>
      <table className="grid" data-testid="oom-list">
        <thead>
          <tr>
            <th>id</th>
            <th>when</th>
            <th>process</th>
            <th>asked</th>
            <th className="num">bytes</th>
            <th>device</th>
            <th className="num">live set</th>
            <th>source</th>
          </tr>
        </thead>
        <tbody>
          {l.data.items.map((o) => (
            <tr
              key={o.id}
              data-testid="oom-row"
              className={st.oom === String(o.id) ? 'sel' : ''}
              onClick={() => set({ ...st, oom: String(o.id) })}
            >
              <td>{o.id}</td>
              <td>{fmtWall(o.ts)}</td>
              <td>
                {o.comm ?? '-'} ({o.pid})
              </td>
              <td>{o.api}</td>
              <td className="num">{fmtBytes(o.bytes)}</td>
              <td>{deviceText({ index: o.device, free_bytes: o.free_bytes, total_bytes: o.total_bytes })}</td>
              <td className="num">{fmtBytes(o.live_bytes)}</td>
              <td>
                {o.source}
                {o.simulated ? ' (simulated)' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {st.oom && <Report id={st.oom} />}
    </div>
  );
}
