import { useEffect, useMemo, useRef, useState } from 'react';
import type { ViewProps } from '../App';
import type { Dec, Int } from '../lib/api';
import { buildFlame, findPath, FNode, layoutFlame, pathOf, searchFlame, Stack, topTable } from '../lib/flame';
import { fmtBytes, fmtNs, fmtPct, fmtWall } from '../lib/format';
import { Badge, Empty, ErrorBox, Loading, useApi } from './common';
import type { MemProfile, Page } from '../lib/types';
import { testHooks } from '../lib/testHooks';
import { OomReports } from './MemoryOom';

const ROW = 18;

interface MemAnswer {
  view: string;
  profiles: number;
  simulated: boolean;
  source: string;
  total_bytes: Dec;
  total_count: Int;
  stacks: Stack[];
  truncated: boolean;
}

function colorOf(name: string, self: number, total: number, mode: 'total' | 'self'): string {
  if (mode === 'self') {
    const f = total ? self / total : 0;
    return 'hsl(' + (40 - 40 * f) + ',' + (40 + 50 * f) + '%,' + (35 + 15 * f) + '%)';
  }
  let h = 0;
  const lib = name.replace(/[:+(].*$/, '');
  for (let i = 0; i < lib.length; i++) h = (h * 31 + lib.charCodeAt(i)) >>> 0;
  return 'hsl(' + (10 + (h % 50)) + ',70%,' + (45 + (h % 13)) + '%)';
}

/* The zoomed frame path of the URL (a JSON array of frame names). */
function framePath(sel: string | undefined): string[] {
  if (!sel) return [];
  try {
    const p: unknown = JSON.parse(sel);
    return Array.isArray(p) ? p.map(String) : [];
  } catch {
    return [];
  }
}

export function Memory({ st, set, session }: ViewProps) {
  const s = session!;
  const [mv, mode] = (st.mv ?? 'alloc').split(':') as [string, string | undefined];
  const colorMode: 'total' | 'self' = mode === 'self' ? 'self' : 'total';
  const [q, setQ] = useState(st.q ?? '');
  const r = useApi<MemAnswer>('sessions/' + s.id + '/memory', { view: mv }, [mv]);
  const profs = useApi<Page<MemProfile>>('memory/profiles', { sid: s.id, limit: 100 }, []);
  const root = useMemo(() => buildFlame(r.data?.stacks ?? [], 'all (' + mv + ')'), [r.data, mv]);
  const focusPath = framePath(st.sel);
  const focus = findPath(root, focusPath) ?? root;
  const search = useMemo(() => searchFlame(root, q), [root, q]);
  const top = useMemo(() => topTable(r.data?.stacks ?? []).slice(0, 40), [r.data]);
  const wrap = useRef<HTMLDivElement>(null);
  const cv = useRef<HTMLCanvasElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const rectsRef = useRef<{ x: number; y: number; w: number; n: FNode }[]>([]);
  const [width, setWidth] = useState(900);

  useEffect(() => {
    const ro = new ResizeObserver(() => setWidth(Math.max(300, wrap.current?.clientWidth ?? 900)));
    if (wrap.current) ro.observe(wrap.current);
    return () => ro.disconnect();
  }, [r.data]);

  useEffect(() => {
    const c = cv.current;
    if (!c || !r.data) return;
    const W = width;
    const rects = layoutFlame(root, focus, 0.5 / W);
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
    g.font = '11px sans-serif';
    const out: { x: number; y: number; w: number; n: FNode }[] = [];
    for (const fr of rects) {
      const x = fr.x * W;
      const w = fr.w * W;
      const y = fr.depth * ROW;
      const dim = search.matches.size > 0 && !search.matches.has(fr.node);
      g.fillStyle =
        fr.node.parent === null
          ? '#3a4150'
          : dim
            ? '#2a2f3a'
            : search.matches.has(fr.node)
              ? '#c86fd6'
              : w < 10
                ? '#5a4a3a'
                : colorOf(fr.node.name, fr.node.self, fr.node.total, colorMode);
      g.fillRect(x, y, Math.max(0.5, w - (w > 2 ? 1 : 0)), ROW - 1);
      if (w >= 20) {
        const maxc = Math.floor((w - 6) / 6.2);
        let t = fr.node.name;
        if (t.length > maxc)
          t = maxc > 6 ? t.slice(0, Math.ceil(maxc / 2) - 1) + '…' + t.slice(t.length - Math.floor(maxc / 2) + 1) : '';
        g.fillStyle = dim ? '#7a8290' : '#f1f3f6';
        if (t) g.fillText(t, x + 3, y + ROW - 5);
      }
      out.push({ x, y, w, n: fr.node });
    }
    rectsRef.current = out;
    testHooks.set('flame', { total: root.total, rects: out.length, focus: pathOf(focus).join(' > '), view: mv });
    testHooks.set('flameHits', () =>
      out.map((o) => ({
        x: o.x,
        y: o.y,
        w: o.w,
        h: ROW - 1,
        name: o.n.name,
        total: o.n.total,
        self: o.n.self,
        count: o.n.count,
        depth: o.n.depth,
        path: pathOf(o.n),
      })),
    );
  }, [root, focus, width, search, colorMode, r.data, mv]);

  const hitAt = (x: number, y: number) =>
    rectsRef.current.find((o) => x >= o.x && x < o.x + Math.max(1, o.w) && y >= o.y && y < o.y + ROW);
  const onMove = (e: React.MouseEvent) => {
    const el = tip.current!;
    const h = hitAt(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
    if (!h) {
      el.style.display = 'none';
      return;
    }
    const n = h.n;
    el.textContent = [
      n.name,
      'total ' + fmtBytes(n.total) + ' (' + n.total + ' B) · ' + fmtPct(n.total / Math.max(1, root.total)) + ' of all',
      'self ' + fmtBytes(n.self) + ' · ' + fmtPct(n.self / Math.max(1, root.total)) + ' of all',
      n.count +
        ' ' +
        (mv === 'inuse' ? 'live blocks' : mv === 'fail' ? 'failed calls' : 'allocations') +
        (n.parent ? ' · click: zoom into this frame' : ''),
    ].join('\n');
    el.style.display = 'block';
    el.style.left = Math.min(e.nativeEvent.offsetX + 14, width - 340) + 'px';
    el.style.top = e.nativeEvent.offsetY + 16 + 'px';
  };
  const onClick = (e: React.MouseEvent) => {
    const h = hitAt(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
    if (!h) return;
    const p = pathOf(h.n);
    set({ ...st, sel: p.length ? JSON.stringify(p) : undefined });
  };
  const setMv = (v: string, m: string) =>
    set({ ...st, mv: v + (m === 'self' ? ':self' : ''), sel: v === mv ? st.sel : undefined });

  const d = r.data;
  return (
    <div className="memory" data-testid="view-memory">
      <div className="toolbar">
        <select data-testid="mem-view" value={mv} onChange={(e) => setMv(e.target.value, colorMode)}>
          <option value="alloc">allocated bytes (over the range)</option>
          <option value="inuse">in use (at the end of the range)</option>
          <option value="fail">failed allocations</option>
        </select>
        <select data-testid="mem-color" value={colorMode} onChange={(e) => setMv(mv, e.target.value)}>
          <option value="total">colour by library</option>
          <option value="self">colour by self share (red = allocates itself)</option>
        </select>
        <input
          data-testid="mem-search"
          placeholder="search frames"
          value={q}
          onChange={(e) => {
            setQ(e.target.value);
            set({ ...st, q: e.target.value || undefined }, true);
          }}
        />
        {q && (
          <span data-testid="mem-search-result">
            {search.matches.size} frames match · {fmtBytes(search.bytes)} (
            {fmtPct(search.bytes / Math.max(1, root.total))})
          </span>
        )}
        {focus !== root && (
          <button data-testid="mem-unzoom" onClick={() => set({ ...st, sel: undefined })}>
            Reset zoom
          </button>
        )}
        {d && d.simulated && <Badge kind="simulated">simulated</Badge>}
        {d && (
          <span className="dim" data-testid="mem-summary">
            {d.profiles} profile{d.profiles === 1 ? '' : 's'} · source {d.source} · total{' '}
            {fmtBytes(Number(d.total_bytes))} in {d.total_count} {mv === 'inuse' ? 'live blocks' : 'calls'}
            {d.truncated ? ' · truncated: only the biggest stacks' : ''}
          </span>
        )}
      </div>
      <OomReports sid={s.id} st={st} set={set} />
      {r.error ? (
        <ErrorBox
          error={r.error}
          what={
            'loading the memory profile (GET /api/v1/sessions/' +
            s.id +
            '/memory). Memory profiles come from the GPU memory profiler (gpufl memprof), POSTed to /api/v1/memprof; this server may not have that endpoint yet'
          }
        />
      ) : null}
      {!d && !r.error && <Loading what="memory profile" />}
      {d && !d.stacks.length && (
        <Empty>
          No GPU memory profile for this session{mv !== 'alloc' ? ' in this view' : ''}. Run the workload under the
          memory profiler (<code>gpufl memprof</code>, docs/memprof.md) so its profiles reach this server (POST
          /api/v1/memprof); they link to the session by sid or host+pid+time.
        </Empty>
      )}
      {d && d.stacks.length > 0 && (
        <div className="flame" ref={wrap}>
          <canvas
            ref={cv}
            data-testid="flame-canvas"
            onMouseMove={onMove}
            onMouseLeave={() => (tip.current!.style.display = 'none')}
            onClick={onClick}
          />
          <div className="tip" ref={tip} />
          {profs.data && profs.data.items.length > 0 && (
            <>
              <h4>Profiles of this session</h4>
              <table className="grid" data-testid="mem-profiles">
                <thead>
                  <tr>
                    <th>id</th>
                    <th>host</th>
                    <th className="num">pid</th>
                    <th>process</th>
                    <th>from</th>
                    <th className="num">length</th>
                    <th>source</th>
                    <th className="num">stacks</th>
                    <th className="num">allocated</th>
                    <th className="num">in use at end</th>
                  </tr>
                </thead>
                <tbody>
                  {profs.data.items.map((p) => (
                    <tr key={p.id} data-testid="mem-profile-row">
                      <td>{p.id}</td>
                      <td>{p.host}</td>
                      <td className="num">{p.pid}</td>
                      <td>{p.comm ?? '-'}</td>
                      <td>{fmtWall(p.start)}</td>
                      <td className="num">{fmtNs(Number(BigInt(p.end) - BigInt(p.start)))}</td>
                      <td>
                        {p.source} {p.simulated && <Badge kind="simulated">simulated</Badge>}
                      </td>
                      <td className="num">{p.stacks}</td>
                      <td className="num">{fmtBytes(Number(p.alloc_bytes))}</td>
                      <td className="num">{fmtBytes(Number(p.inuse_bytes))}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          <h4>Top frames by self</h4>
          <table className="grid" data-testid="mem-top">
            <thead>
              <tr>
                <th>frame</th>
                <th className="num">self</th>
                <th className="num">self %</th>
                <th className="num">total</th>
                <th className="num">total %</th>
              </tr>
            </thead>
            <tbody>
              {top.map((t) => (
                <tr key={t.name} onClick={() => setQ(t.name)}>
                  <td className="name">{t.name}</td>
                  <td className="num">{fmtBytes(t.self)}</td>
                  <td className="num">{fmtPct(t.self / Math.max(1, root.total))}</td>
                  <td className="num">{fmtBytes(t.total)}</td>
                  <td className="num">{fmtPct(t.total / Math.max(1, root.total))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
