// Timeline.tsx - the kernel timeline canvas.  React only mounts it; the
// viewport lives in a ref and one rAF draws it (no React render while
// panning or zooming).  Zoomed out it draws the server's timeline summary
// (GET .../timeline); once the view holds at most RAW_MAX kernels it
// fetches and draws the kernels themselves, with the copy lanes and the
// scope lane.
import { useEffect, useRef, useState } from 'react';
import { api, apiAll, big, num, rel } from '../lib/api';
import { demangle, fmtBytes, fmtNs } from '../lib/format';
import type { CopyItem, KernelItem, TimelineAnswer } from '../lib/types';
import { testHooks } from '../lib/testHooks';
import {
  clampView,
  cLane,
  countInView,
  drawList,
  Item,
  kLane,
  Lane,
  layoutLanes,
  pan,
  pick,
  Rect,
  scopeItems,
  SCOPE_LANE,
  summaryItems,
  ticks,
  tOf,
  View,
  xOf,
  zoom,
} from '../lib/timeline';

export const RAW_MAX = 4000;
const LABEL_W = 130;
const AXIS_H = 22;

interface Props {
  sid: string;
  base: bigint; // session first_ts
  span: number; // ns
  ops: number; // the session's copy/memset/sync/alloc/free count
  view: View | null; // from the URL
  selected: number | null;
  highlight: string; // kernel-name filter: other kernels are dimmed
  onView: (v: View) => void; // settled view (debounced), for the URL
  onPick: (kid: number) => void;
}

interface Loaded {
  from: number;
  to: number;
  nsPerPx: number;
  items: Item[];
  names: Record<string, string>;
  lanes: { dev: number; stream: number }[];
}

interface Raw {
  from: number;
  to: number;
  items: Item[]; // kernels + scopes + copies
  copyLanes: { dev: number; kind: string }[];
  truncated: boolean;
}

function hue(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return (h >>> 0) % 360;
}

export function Timeline({ sid, base, span, ops, view, selected, highlight, onView, onPick }: Props) {
  const wrap = useRef<HTMLDivElement>(null);
  const cv = useRef<HTMLCanvasElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const st = useRef({
    v: view ?? { t0: 0, t1: Math.max(1, span) },
    sum: null as Loaded | null,
    raw: null as Raw | null,
    copies: null as null | { items: Item[]; lanes: { dev: number; kind: string }[] }, // all of them, when few
    rects: [] as Rect[],
    lanes: [] as Lane[],
    width: 800,
    frame: 0,
    fetchTimer: 0,
    urlTimer: 0,
    gen: 0,
    selected,
    hl: highlight.toLowerCase(),
    drag: null as null | { x: number; v: View; moved: boolean },
    frames: [] as number[],
  });
  const cb = useRef({ onView, onPick });
  cb.current = { onView, onPick };
  const [status, setStatus] = useState('loading the timeline summary…');
  const [err, setErr] = useState<string | null>(null);
  const hi = Math.max(1, span);

  const schedule = () => {
    const s = st.current;
    if (!s.frame) s.frame = requestAnimationFrame(draw);
  };

  const draw = () => {
    const s = st.current;
    s.frame = 0;
    const c = cv.current;
    if (!c) return;
    const t = performance.now();
    const W = Math.max(100, (wrap.current?.clientWidth ?? 900) - LABEL_W);
    s.width = W;
    const v = s.v;
    const rawOk = s.raw && s.raw.from <= v.t0 && s.raw.to >= v.t1;
    const mode = rawOk ? 'raw' : 'summary';
    let items: Item[] = [];
    let copyLanes: { dev: number; kind: string }[] = [];
    if (rawOk) {
      items = s.raw!.items;
      copyLanes = s.raw!.copyLanes;
    } else if (s.sum) {
      items = s.copies ? s.sum.items.concat(s.copies.items) : s.sum.items;
      copyLanes = s.copies ? s.copies.lanes : [];
    }
    const klanes = s.sum ? s.sum.lanes : [];
    s.lanes = layoutLanes(klanes, copyLanes.length ? copyLanes : s.raw ? s.raw.copyLanes : [], AXIS_H, true);
    const H = (s.lanes.length ? s.lanes[s.lanes.length - 1].y + s.lanes[s.lanes.length - 1].h : AXIS_H) + 6;
    const dpr = window.devicePixelRatio || 1;
    const cw = W + LABEL_W;
    if (c.width !== Math.round(cw * dpr) || c.height !== Math.round(H * dpr)) {
      c.width = Math.round(cw * dpr);
      c.height = Math.round(H * dpr);
      c.style.width = cw + 'px';
      c.style.height = H + 'px';
    }
    const g = c.getContext('2d')!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#12151b';
    g.fillRect(0, 0, cw, H);
    // axis
    g.font = '11px sans-serif';
    g.fillStyle = '#8b94a3';
    g.strokeStyle = '#232833';
    g.beginPath();
    for (const tk of ticks(v, W)) {
      const x = LABEL_W + xOf(tk, v, W);
      g.moveTo(Math.round(x) + 0.5, AXIS_H - 6);
      g.lineTo(Math.round(x) + 0.5, H);
      g.fillText(fmtNs(tk), x + 3, 12);
    }
    g.stroke();
    const rects = drawList(items, v, W);
    s.rects = rects;
    const laneY = new Map(s.lanes.map((l) => [l.key, l] as const));
    let labels = 0;
    g.save();
    g.beginPath();
    g.rect(LABEL_W, 0, W, H);
    g.clip();
    const nameOf = (it: Item) => (typeof it.name === 'string' ? it.name : (s.sum?.names[String(it.name)] ?? '?'));
    for (const r of rects) {
      const l = laneY.get(r.lane);
      if (!l) continue;
      const nm = nameOf(r.item);
      const h = l.kind === 'scope' ? 200 : l.kind === 'copy' ? 30 : hue(nm);
      const dim = s.hl && l.kind === 'kernel' && !nm.toLowerCase().includes(s.hl);
      g.fillStyle = dim
        ? 'rgba(120,128,140,0.25)'
        : 'hsla(' + h + ',60%,' + (l.kind === 'copy' ? 55 : 50) + '%,' + (0.35 + 0.65 * r.shade).toFixed(2) + ')';
      g.fillRect(LABEL_W + r.x, l.y + 1, Math.max(1, r.w - (r.w > 3 ? 1 : 0)), l.h - 2);
    }
    g.fillStyle = '#e6e9ef';
    for (const r of rects) {
      if (!r.label || labels > 500) continue;
      const l = laneY.get(r.lane);
      if (!l) continue;
      let text = l.kind === 'kernel' ? demangle(nameOf(r.item)).replace(/\(…\)$/, '') : nameOf(r.item);
      if (r.item.count > 1 && mode === 'summary') text = r.item.count + '× ' + text;
      const maxc = Math.floor((r.w - 6) / 6.2);
      if (maxc < 3) continue;
      if (text.length > maxc) text = text.slice(0, maxc - 1) + '…';
      g.fillText(text, LABEL_W + Math.max(0, r.x) + 3, l.y + l.h - 7);
      labels++;
    }
    // selection outline
    if (s.selected !== null) {
      for (const r of rects)
        if (r.item.id === s.selected && r.lane !== SCOPE_LANE && r.lane[0] === 'k') {
          const l = laneY.get(r.lane)!;
          g.strokeStyle = '#ffd54a';
          g.lineWidth = 2;
          g.strokeRect(LABEL_W + r.x - 1, l.y, Math.max(3, r.w + 2), l.h);
        }
    }
    g.restore();
    // lane labels
    g.fillStyle = '#181c24';
    g.fillRect(0, AXIS_H, LABEL_W, H);
    for (const l of s.lanes) {
      g.fillStyle = l.kind === 'kernel' ? '#c9d1dd' : '#8b94a3';
      g.fillText(l.label, 6, l.y + l.h - 7);
      if (l.kind === 'scope' && mode !== 'raw') {
        g.fillStyle = '#5d6675';
        g.fillText('zoom in to see scope instances' + (s.copies ? '' : ' and copies'), LABEL_W + 8, l.y + l.h - 5);
      }
    }
    if (testHooks.on) {
      const ms = performance.now() - t;
      s.frames.push(ms);
      if (s.frames.length > 2000) s.frames.splice(0, 1000);
      testHooks.set('timeline', {
        t0: v.t0,
        t1: v.t1,
        base: base.toString(),
        rects: rects.length,
        labels,
        mode,
        ms,
        frames: s.frames,
      });
    }
  };

  const ensureData = async () => {
    const s = st.current;
    const v = s.v;
    const gen = ++s.gen;
    const vs = v.t1 - v.t0;
    const W = s.width;
    const nsPerPx = vs / W;
    const need =
      !s.sum || s.sum.from > v.t0 || s.sum.to < v.t1 || s.sum.nsPerPx > nsPerPx * 2 || s.sum.nsPerPx < nsPerPx / 2;
    testHooks.busy(1);
    try {
      if (!s.copies && ops <= 5000) {
        const cs = await apiAll<CopyItem>('sessions/' + sid + '/copies', {}, 5000);
        if (gen !== s.gen) return;
        s.copies = copyItems(cs.items, base);
      }
      if (need) {
        const pv = clampView({ t0: v.t0 - vs, t1: v.t1 + vs }, 0, hi);
        const pw = Math.min(10000, Math.max(10, Math.round(((pv.t1 - pv.t0) / vs) * W)));
        const r = await api<TimelineAnswer>('sessions/' + sid + '/timeline', {
          from: (base + BigInt(Math.floor(pv.t0))).toString(),
          to: (base + BigInt(Math.ceil(pv.t1))).toString(),
          width: pw,
        });
        if (gen !== s.gen) return;
        const from = rel(r.from, base);
        const to = rel(r.to, base);
        const items = summaryItems({ from, to, width: r.width, bucket_ns: Number(r.bucket_ns), lanes: r.lanes });
        s.sum = {
          from,
          to,
          nsPerPx: (to - from) / r.width,
          items,
          names: r.names,
          lanes: r.lanes.map((l) => ({ dev: l.dev, stream: l.stream })),
        };
        if (!r.lanes.length)
          setStatus(
            'No kernels in this session: the timeline is empty. Sessions with GPU activity show one lane per device and stream.',
          );
      }
      const n = countInView(s.sum!.items, v);
      if (n <= RAW_MAX && !(s.raw && s.raw.from <= v.t0 && s.raw.to >= v.t1)) {
        const pv = clampView({ t0: v.t0 - vs, t1: v.t1 + vs }, 0, hi);
        // kernels that start up to one view-span before the window still overlap it
        const q = {
          from: (base + BigInt(Math.max(0, Math.floor(pv.t0 - vs)))).toString(),
          to: (base + BigInt(Math.ceil(pv.t1))).toString(),
        };
        const [ks, cs] = await Promise.all([
          apiAll<KernelItem>('sessions/' + sid + '/kernels', q, RAW_MAX * 3),
          apiAll<CopyItem>('sessions/' + sid + '/copies', q, 5000),
        ]);
        if (gen !== s.gen) return;
        const kitems: Item[] = ks.items.map((k) => ({
          lane: kLane(k.dev, k.stream),
          t: rel(k.ts, base),
          dur: Number(k.dur),
          count: 1,
          busy: Number(k.dur),
          name: k.name,
          id: k.kid,
        }));
        const sitems = scopeItems(ks.items.map((k) => ({ scope: k.scope, t: rel(k.ts, base), dur: Number(k.dur) })));
        const cc = copyItems(cs.items, base);
        s.raw = {
          from: pv.t0,
          to: pv.t1,
          items: [...sitems, ...kitems, ...cc.items],
          copyLanes: cc.lanes,
          truncated: ks.more,
        };
      }
      const inRaw = s.raw && s.raw.from <= v.t0 && s.raw.to >= v.t1;
      setStatus(
        inRaw
          ? 'kernels: ' +
              countInView(
                s.raw!.items.filter((i) => i.lane[0] === 'k'),
                v,
              ) +
              ' in view (raw events' +
              (s.raw!.truncated ? ', truncated' : '') +
              ')'
          : '≈' +
              n +
              ' kernels in view (server summary, ' +
              fmtNs(s.sum!.nsPerPx) +
              '/px; zoom in below ' +
              RAW_MAX +
              ' kernels for raw events)',
      );
      setErr(null);
    } catch (e) {
      if (gen === s.gen) setErr(e instanceof Error ? e.message : String(e));
    } finally {
      testHooks.busy(-1);
      schedule();
    }
  };

  const changed = (nv: View) => {
    const s = st.current;
    s.v = nv;
    schedule();
    if (s.fetchTimer) clearTimeout(s.fetchTimer);
    else testHooks.busy(1);
    s.fetchTimer = window.setTimeout(() => {
      s.fetchTimer = 0;
      testHooks.busy(-1);
      ensureData();
    }, 120);
    if (s.urlTimer) clearTimeout(s.urlTimer);
    else testHooks.busy(1);
    s.urlTimer = window.setTimeout(() => {
      s.urlTimer = 0;
      testHooks.busy(-1);
      cb.current.onView(s.v);
    }, 300);
  };

  // follow URL changes made elsewhere (back button, links)
  useEffect(() => {
    const s = st.current;
    const nv = view ?? { t0: 0, t1: hi };
    if (Math.abs(nv.t0 - s.v.t0) > 1 || Math.abs(nv.t1 - s.v.t1) > 1) {
      s.v = clampView(nv, 0, hi);
      ensureData();
    }
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the viewport lives in st (a ref) that schedule/ensureData read when they run; only a new range in the URL is a reason to refetch
  }, [view?.t0, view?.t1]);

  useEffect(() => {
    st.current.hl = highlight.toLowerCase();
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- schedule() only queues a draw from the ref; the filter is the only input
  }, [highlight]);

  useEffect(() => {
    st.current.selected = selected;
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- schedule() only queues a draw from the ref; the selection is the only input
  }, [selected]);

  useEffect(() => {
    const s = st.current;
    s.width = Math.max(100, (wrap.current?.clientWidth ?? 900) - LABEL_W);
    ensureData();
    const ro = new ResizeObserver(() => schedule());
    if (wrap.current) ro.observe(wrap.current);
    const c = cv.current!;
    const frac = (e: MouseEvent) => Math.min(1, Math.max(0, (e.offsetX - LABEL_W) / s.width));
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY))
        changed(pan(s.v, (e.deltaX || e.deltaY) / 1000, 0, hi));
      else changed(zoom(s.v, Math.pow(1.0015, e.deltaY), frac(e), 0, hi));
    };
    const onDown = (e: MouseEvent) => {
      s.drag = { x: e.clientX, v: s.v, moved: false };
    };
    const onMove = (e: MouseEvent) => {
      if (s.drag) {
        const dx = e.clientX - s.drag.x;
        if (Math.abs(dx) > 3) s.drag.moved = true;
        if (s.drag.moved) changed(pan(s.drag.v, -dx / s.width, 0, hi));
        return;
      }
      hover(e);
    };
    const onUp = (e: MouseEvent) => {
      const d = s.drag;
      s.drag = null;
      if (!d || d.moved) return;
      const hit = hitAt(e.offsetX, e.offsetY);
      if (!hit) return;
      if (hit.r.item.id !== undefined && hit.lane.kind === 'kernel') cb.current.onPick(hit.r.item.id);
      else if (hit.lane.kind === 'scope' || hit.lane.kind === 'copy')
        changed(clampView({ t0: hit.r.item.t - hit.r.item.dur * 0.1, t1: hit.r.item.t + hit.r.item.dur * 1.1 }, 0, hi));
      else {
        // a summary bucket: zoom to it
        const t = tOf(hit.r.x + hit.r.w / 2, s.v, s.width);
        const w = Math.max(hit.r.item.dur * 8, (s.v.t1 - s.v.t0) / 20);
        changed(clampView({ t0: t - w / 2, t1: t + w / 2 }, 0, hi));
      }
    };
    const onLeave = () => {
      s.drag = null;
      if (tip.current) tip.current.style.display = 'none';
    };
    c.addEventListener('wheel', onWheel, { passive: false });
    c.addEventListener('mousedown', onDown);
    c.addEventListener('mousemove', onMove);
    c.addEventListener('mouseup', onUp);
    c.addEventListener('mouseleave', onLeave);
    testHooks.set('timelineHits', () =>
      s.rects.map((r) => {
        const l = s.lanes.find((x) => x.key === r.lane)!;
        return { x: LABEL_W + r.x, y: l.y, w: r.w, h: l.h, lane: l.kind, id: r.item.id ?? null, count: r.item.count };
      }),
    );
    testHooks.set('timelineSet', (t0: number, t1: number) => changed(clampView({ t0, t1 }, 0, hi)));
    return () => {
      ro.disconnect();
      c.removeEventListener('wheel', onWheel);
      c.removeEventListener('mousedown', onDown);
      c.removeEventListener('mousemove', onMove);
      c.removeEventListener('mouseup', onUp);
      c.removeEventListener('mouseleave', onLeave);
      cancelAnimationFrame(s.frame);
      if (s.urlTimer) {
        clearTimeout(s.urlTimer);
        s.urlTimer = 0;
        testHooks.busy(-1);
      }
      if (s.fetchTimer) {
        clearTimeout(s.fetchTimer);
        s.fetchTimer = 0;
        testHooks.busy(-1);
      }
      s.gen++;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the listeners read everything through st and cb (refs): they are set up once per session, not on every render
  }, [sid]);

  const hitAt = (x: number, y: number): { r: Rect; lane: Lane } | null => {
    const s = st.current;
    const lane = s.lanes.find((l) => y >= l.y && y < l.y + l.h);
    if (!lane || x < LABEL_W) return null;
    const r = pick(s.rects, lane.key, x - LABEL_W);
    return r ? { r, lane } : null;
  };

  const hover = (e: MouseEvent) => {
    const s = st.current;
    const el = tip.current;
    if (!el) return;
    const hit = hitAt(e.offsetX, e.offsetY);
    if (!hit) {
      el.style.display = 'none';
      return;
    }
    const it = hit.r.item;
    const nm = typeof it.name === 'string' ? it.name : (s.sum?.names[String(it.name)] ?? '?');
    const lines =
      hit.lane.kind === 'kernel' && it.count === 1 && it.id !== undefined
        ? [
            demangle(nm),
            'kernel ' + it.id + ' · start +' + fmtNs(it.t) + ' · ' + fmtNs(it.dur),
            'click: open in the inspector',
          ]
        : hit.lane.kind === 'kernel'
          ? [
              it.count + ' kernels in this pixel column · busy ' + fmtNs(it.busy),
              'longest: ' + demangle(nm),
              'click: zoom in',
            ]
          : [nm, '+' + fmtNs(it.t) + ' · ' + fmtNs(it.dur), 'click: zoom to it'];
    el.textContent = lines.join('\n');
    el.style.display = 'block';
    el.style.left = Math.min(e.offsetX + 14, s.width + LABEL_W - 320) + 'px';
    el.style.top = e.offsetY + 16 + 'px';
  };

  const btn = (f: () => View) => () => changed(f());
  return (
    <div className="timeline" data-testid="timeline">
      <div className="toolbar">
        <button data-testid="zoom-in" onClick={btn(() => zoom(st.current.v, 0.5, 0.5, 0, hi))}>
          Zoom in
        </button>
        <button data-testid="zoom-out" onClick={btn(() => zoom(st.current.v, 2, 0.5, 0, hi))}>
          Zoom out
        </button>
        <button onClick={btn(() => pan(st.current.v, -0.25, 0, hi))}>◀</button>
        <button onClick={btn(() => pan(st.current.v, 0.25, 0, hi))}>▶</button>
        <button data-testid="zoom-reset" onClick={btn(() => ({ t0: 0, t1: hi }))}>
          Whole session
        </button>
        <span className="dim" data-testid="timeline-status">
          {status}
        </span>
        <span className="dim hint">wheel: zoom · drag or shift+wheel: pan · click a kernel: inspect</span>
      </div>
      {err && (
        <div className="error" data-testid="error">
          Timeline: {err}
        </div>
      )}
      <div className="tlwrap" ref={wrap}>
        <canvas ref={cv} data-testid="timeline-canvas" />
        <div className="tip" ref={tip} />
      </div>
    </div>
  );
}

function copyItems(rows: CopyItem[], base: bigint): { items: Item[]; lanes: { dev: number; kind: string }[] } {
  const lanes = new Map<string, { dev: number; kind: string }>();
  const items: Item[] = rows
    .filter((c) => c.type !== 'alloc' && c.type !== 'free')
    .map((c) => {
      const kind = c.type === 'memcpy' ? 'memcpy ' + c.kind : c.type;
      lanes.set(cLane(c.dev, kind), { dev: c.dev, kind });
      const dur = Math.max(1, Number(c.dur));
      return {
        lane: cLane(c.dev, kind),
        t: rel(c.ts, base),
        dur,
        count: 1,
        busy: dur,
        name: kind + (num(c.bytes) ? ' ' + fmtBytes(num(c.bytes)) : ''),
        id: c.seq,
      };
    });
  return { items, lanes: [...lanes.values()] };
}

export function viewFromUrl(from: string | undefined, to: string | undefined, base: bigint): View | null {
  if (!from || !to) return null;
  return { t0: Number(big(from) - base), t1: Number(big(to) - base) };
}
