// Timeline.tsx - the kernel timeline canvas (docs/ui.md "Kernels").
//
// React mounts it and renders its toolbar and panels; everything that moves
// lives in a ref (`st`) and one requestAnimationFrame draws it: no React
// render while panning or zooming (Perfetto's raf scheduler, the anchors'
// §6.4).  The lanes are painted into one pixel buffer (lib/raster.ts) from
// time tiles (lib/tiles.ts): each lane of each tile is drawn from the
// server's exact kernels or from its per-column summary, never from a
// partial list; a stretch whose tile has not arrived is hatched as loading.
// Text, outlines, flow arrows, marks and the area selection are drawn over
// it with the 2D context.
import { useEffect, useRef, useState } from 'react';
import { api, apiAll, ApiError, getToken, num } from '../lib/api';
import { fmtBytes, fmtNs } from '../lib/format';
import { axisTicks, decimalsFor, fmtRel, fmtWallNs, niceStep, styleFor } from '../lib/time';
import { BG, LANE_BG, Raster, hexColor, hsl, shades } from '../lib/raster';
import {
  parseTile,
  resFor,
  Tile,
  TileCache,
  tileSpan,
  tilesFor,
  TILE_COLS,
  TILE_EXACT,
  TimelineTileAnswer,
} from '../lib/tiles';
import { CallTile, CopySpan, copySpans, parseCalls, ScopeSpan, scopesOf, CALL_COLORS } from '../lib/sources';
import { fmtCounter, pointAt, shapeTracks, Track, TRACKS } from '../lib/counters';
import { density, hitsIn, strata, Stratum } from '../lib/search';
import type { SysSeries } from '../lib/series';
import type {
  CallsAnswer,
  CopyItem,
  Device,
  ExportAnswer,
  KernelAgg,
  KernelDetail,
  KernelItem,
  Page,
} from '../lib/types';
import { testHooks, type TimelineDraw } from '../lib/testHooks';
import { noteMotion } from '../lib/motion';
import {
  aLane,
  clampView,
  cLane,
  countInView,
  DIM,
  fitView,
  HITS_LANE,
  kLane,
  Box,
  Label,
  Lane,
  lanesBottom,
  layoutLanes,
  NameColors,
  paintKernelRow,
  paintSpans,
  pan,
  pickKernel,
  Seg,
  segments,
  sLane,
  tLane,
  tOf,
  View,
  xOf,
  zoom,
} from '../lib/timeline';
import { AreaPanel, Area } from './AreaPanel';

const LABEL_W = 170;
const MINI_H = 26;
const AXIS_H = 20;
const TOP = MINI_H + AXIS_H + 4;
/* tiles asked at once */
const PARALLEL = 4;
/* all copies are loaded once when the session has at most this many ops */
const COPIES_ALL = 5000;
/* API calls listed one by one per tile at most */
const CALLS_EXACT = 4096;
/* scope instances fetched for a view at most (estimated) */
const SCOPES_MAX = 4000;
const HIT_STRATA = 48;
const SETTLE_MS = 90;
const MAX_WAIT_MS = 400;
/* a tile whose fetch failed is asked again after this long */
const FAIL_MS = 5000;
const HIT_LIMIT = 40;

const MARK = '#f0c674';
const SEL = '#ffd54a';
const FLOW = '#ff9f43';

interface Props {
  sid: string;
  base: bigint; // session first_ts
  span: number; // ns
  running: boolean;
  kernels: number; // the session's kernel count
  ops: number; // the session's copy/memset/sync/alloc/free count
  scopes: number; // completed scope instances
  devices: Device[];
  interval: number; // the session's sampling interval (ms; 0: none)
  view: View | null; // from the URL
  selected: number | null;
  query: string; // kernel-name search
  onView: (v: View) => void; // settled view (debounced), for the URL
  onPick: (kid: number | null) => void;
}

interface Want {
  kind: 'tile' | 'calls';
  res: number;
  idx: number;
}

interface FlowInfo {
  kid: number;
  key: string;
  t: number;
  dur: number;
  tid: number | null;
  apiT: number | null;
  apiDur: number;
}

function laneAt(lanes: Lane[], y: number): Lane | null {
  for (const l of lanes) if (y >= l.y && y < l.y + l.h) return l;
  return null;
}

export function Timeline(props: Props) {
  const { sid, base, span, running, ops, scopes, devices, interval, view, selected, query, onView, onPick } = props;
  const wrap = useRef<HTMLDivElement>(null);
  const cv = useRef<HTMLCanvasElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const hi0 = Math.max(1, span);
  const st = useRef({
    hi: hi0,
    v: clampView(view ?? { t0: 0, t1: hi0 }, 0, hi0),
    W: 800, // plot width, css px
    dpr: 1,
    raster: null as Raster | null,
    frame: 0,
    // data
    tiles: new TileCache<Tile>(384),
    calls: new TileCache<CallTile>(256),
    stale: new Set<string>(), // tiles of a live session's end, to refetch
    pending: new Set<string>(),
    callsRunning: 0,
    kickFirst: 0,
    mini: null as null | { tile: Tile; n: number; hs: Float32Array },
    statusTimer: 0,
    moved: 0, // when the view last moved (performance.now())
    failed: new Map<string, number>(), // tile -> when its fetch failed (retried after FAIL_MS)
    noCalls: false, // the server has no /calls (404): no API lanes
    noScopes: false, // ... no /export: no scope lanes
    queue: [] as Want[],
    running: 0,
    names: new Map<number, string>(),
    mangled: new Map<number, string>(),
    colors: null as NameColors | null,
    laneSet: new Map<string, { dev: number; stream: number }>(),
    threads: new Set<number>(),
    copiesAll: null as null | Map<string, { dev: number; kind: string; spans: CopySpan[] }>,
    copiesWin: null as null | {
      a: number;
      b: number;
      lanes: Map<string, { dev: number; kind: string; spans: CopySpan[] }>;
      complete: boolean;
    },
    copyLanes: new Map<string, { dev: number; kind: string }>(),
    scopeWin: null as null | { a: number; b: number; items: ScopeSpan[]; complete: boolean; to: number },
    scopeDepths: 0,
    counters: null as null | { a: number; b: number; px: number; tracks: Track[] },
    trackIds: new Set(TRACKS.map((t) => t.id)),
    tracksOff: new Set<string>(), // counter lanes (tLane keys) turned off one by one
    // counter lanes seen in any answer: they stay (empty where a range has
    // no samples) so that lanes do not jump while panning
    trackLanes: new Map<string, { dev: number; track: string; label: string }>(),
    hits: null as null | { q: string; a: number; b: number; strata: Stratum[]; whole: Stratum[] },
    hitTotal: null as number | null,
    q: query,
    match: null as null | ((id: number) => boolean),
    // interaction
    selected,
    flow: null as FlowInfo | null,
    // F pressed while the selected kernel's details were still on their way:
    // the fit happens when they come (a key that did nothing was the bug)
    fitWanted: null as number | null,
    area: null as Area | null,
    marks: [] as number[],
    hover: null as null | { x: number; y: number },
    drag: null as null | { x: number; y: number; v: View; moved: boolean; area: boolean; mini: boolean },
    keys: new Set<string>(),
    keyVel: 0,
    lastKeyT: 0,
    follow: running && (!view || view.t1 >= hi0 - 1),
    lanes: [] as Lane[],
    segs: [] as Seg<Tile>[],
    res: 1,
    maxRes: 1,
    labels: [] as Label[],
    boxes: [] as Box[],
    frames: [] as number[],
    phases: [] as [number, number, number][], // per draw: paint, putImageData, text and overlays (ms)
    urlTimer: 0,
    dataTimer: 0,
    gen: 0,
    statusKey: '',
  });
  const cb = useRef({ onView, onPick });
  cb.current = { onView, onPick };
  // the status line is written into its element, not through React state:
  // a render of this component every 250 ms while the view moves cost
  // frames their budget (a frame in ~15 with one)
  const statusEl = useRef<HTMLSpanElement>(null);
  const [err, setErr] = useState<string | null>(null);
  const [area, setArea] = useState<Area | null>(null);
  const [trackIds, setTrackIds] = useState<Set<string>>(() => new Set(TRACKS.map((t) => t.id)));
  const [tracksOff, setTracksOff] = useState<Set<string>>(() => new Set());
  const [hitInfo, setHitInfo] = useState('');
  const [follow, setFollow] = useState(st.current.follow);
  const [exportMsg, setExportMsg] = useState<string | null>(null);

  const S = st.current;
  if (!S.colors) S.colors = new NameColors((id) => S.names.get(id) ?? String(id));

  const nameOf = (id: number) => S.names.get(id) ?? '?';

  /* ---- scheduling ------------------------------------------------------ */

  const schedule = () => {
    if (!S.frame) S.frame = requestAnimationFrame(frame);
  };

  const frame = () => {
    S.frame = 0;
    const now = performance.now();
    // held keys move the view once per frame (keyStep's setView asks for
    // the next frame: exactly one is pending)
    if (S.keys.size) keyStep(now);
    else S.lastKeyT = 0;
    draw();
    if (S.keys.size) schedule();
  };

  const setView = (nv: View, user = true) => {
    S.v = clampView(nv, 0, S.hi);
    S.moved = performance.now();
    // a user's move holds back the table under the timeline (lib/motion.ts);
    // live following does not
    if (user) noteMotion(S.moved);
    if (user && S.follow && S.v.t1 < S.hi - (S.v.t1 - S.v.t0) * 0.001) {
      S.follow = false;
      setFollow(false);
    }
    schedule();
    kick();
    if (S.urlTimer) clearTimeout(S.urlTimer);
    else testHooks.busy(1);
    S.urlTimer = window.setTimeout(() => {
      S.urlTimer = 0;
      testHooks.busy(-1);
      cb.current.onView(S.v);
    }, 300);
  };

  /* ---- data -------------------------------------------------------------- */

  const wantTiles = (): Want[] => {
    const v = S.v;
    const nsPerPx = (v.t1 - v.t0) / Math.max(1, S.W);
    const res = Math.min(resFor(nsPerPx), S.maxRes);
    const out: Want[] = [];
    const seen = new Set<string>();
    const add = (kind: Want['kind'], r: number, i: number) => {
      const c = kind === 'tile' ? S.tiles : S.calls;
      const k = kind[0] + r + ':' + i;
      if (seen.has(k) || (kind === 'calls' && S.noCalls)) return;
      seen.add(k);
      const f = S.failed.get(k);
      if (f !== undefined && performance.now() - f < FAIL_MS) return;
      if ((!c.has(r, i) || S.stale.has(k)) && !S.pending.has(k)) out.push({ kind, res: r, idx: i });
    };
    add('tile', S.maxRes, 0);
    const vis = tilesFor(v.t0, v.t1, res, 0, S.hi);
    for (const i of vis) add('tile', res, i);
    // once the view is still: one tile of padding each side and the next
    // coarser level, so that panning and zooming out find their tiles
    // ready (while it moves, each fetch costs the page ~3 ms: only what
    // is in view)
    if (performance.now() - S.moved >= SETTLE_MS * 0.9) {
      for (const i of tilesFor(v.t0, v.t1, res, 1, S.hi)) add('tile', res, i);
      if (res * 2 <= S.maxRes) for (const i of tilesFor(v.t0, v.t1, res * 2, 0, S.hi)) add('tile', res * 2, i);
    }
    // API calls last, and only once the view is still: the kernels come
    // first.  Asked at every zoom: where a tile holds more than
    // CALLS_EXACT calls the server answers its per-column summary
    // (docs/api.md "calls"), so the lane is complete zoomed out too.  The
    // server answers coarse tiles from the summary it keeps at ingest (ms),
    // but tiles of 0.27-2.1 s from a scan of their calls (~100 ms per
    // 70k calls), too much to ask for every resolution a zoom sweep passes
    if (performance.now() - S.moved >= SETTLE_MS * 0.9) {
      add('calls', S.maxRes, 0);
      for (const i of vis) add('calls', res, i);
    }
    return out;
  };

  /* ask for the tiles of the view once it has been still for SETTLE_MS
     (at most MAX_WAIT_MS after the first change): a zoom sweep passes a
     resolution in a few frames, and its tiles would only load the server
     while the view draws from the coarser ones it has */
  const kick = () => {
    const now = performance.now();
    if (!S.dataTimer) {
      testHooks.busy(1);
      S.kickFirst = now;
    } else clearTimeout(S.dataTimer);
    const wait = Math.max(0, Math.min(SETTLE_MS, S.kickFirst + MAX_WAIT_MS - now));
    S.dataTimer = window.setTimeout(() => {
      S.dataTimer = 0;
      testHooks.busy(-1);
      S.queue = wantTiles();
      pump();
      loadSide();
    }, wait);
  };

  const pump = () => {
    while (S.running < PARALLEL && S.queue.length) {
      // one API-call request at a time (they are the server's slow ones)
      const qi = S.callsRunning ? S.queue.findIndex((x) => x.kind === 'tile') : 0;
      if (qi < 0) break;
      const w = S.queue.splice(qi, 1)[0];
      const k = w.kind[0] + w.res + ':' + w.idx;
      const cache = w.kind === 'tile' ? S.tiles : S.calls;
      if (S.pending.has(k) || (cache.has(w.res, w.idx) && !S.stale.has(k))) continue;
      if (w.kind === 'calls') S.callsRunning++;
      S.pending.add(k);
      S.running++;
      testHooks.busy(1);
      const gen = S.gen;
      fetchOne(w)
        .then(() => {
          S.failed.delete(k);
          setErr(null);
        })
        .catch((e) => {
          if (gen !== S.gen) return;
          if (w.kind === 'calls' && e instanceof ApiError && e.status === 404) {
            S.noCalls = true; // a server without the API-calls endpoint
            return;
          }
          S.failed.set(k, performance.now());
          setErr(e instanceof Error ? e.message : String(e));
        })
        .finally(() => {
          S.pending.delete(k);
          S.running--;
          if (w.kind === 'calls') S.callsRunning--;
          testHooks.busy(-1);
          if (gen !== S.gen) return;
          schedule();
          pump();
          if (!S.running && !S.queue.length) {
            const more = wantTiles();
            if (more.length) {
              S.queue = more;
              pump();
            }
          }
        });
    }
  };

  const fetchOne = async (w: Want) => {
    const from = BigInt(w.idx * tileSpan(w.res));
    const to = from + BigInt(tileSpan(w.res));
    const q = { from: (base + from).toString(), to: (base + to).toString(), width: TILE_COLS };
    const gen = S.gen;
    if (w.kind === 'tile') {
      const a = await api<TimelineTileAnswer>('sessions/' + sid + '/timeline', { ...q, exact: TILE_EXACT });
      if (gen !== S.gen) return;
      const t = parseTile(a, w.res, w.idx, base, S.names, S.mangled);
      S.tiles.set(w.res, w.idx, t);
      S.stale.delete('t' + w.res + ':' + w.idx);
      for (const l of t.lanes) if (!S.laneSet.has(l.key)) S.laneSet.set(l.key, { dev: l.dev, stream: l.stream });
    } else {
      const a = await api<CallsAnswer>('sessions/' + sid + '/calls', { ...q, limit: CALLS_EXACT });
      if (gen !== S.gen) return;
      const t = parseCalls(a, w.res, w.idx, base);
      S.calls.set(w.res, w.idx, t);
      S.stale.delete('c' + w.res + ':' + w.idx);
      for (const tid of t.threads.keys()) S.threads.add(tid);
    }
  };

  /* copies, scopes, counters and search hits: per view (padded), when the
     view leaves what was loaded or the zoom changed 2x */
  const sideTimer = useRef(0);
  const loadSide = () => {
    if (sideTimer.current) return;
    testHooks.busy(1);
    sideTimer.current = window.setTimeout(async () => {
      sideTimer.current = 0;
      const gen = S.gen;
      try {
        await Promise.all([loadCopies(gen), loadScopes(gen), loadCounters(gen), loadHits(gen)]);
      } catch (e) {
        if (gen === S.gen) setErr(e instanceof Error ? e.message : String(e));
      } finally {
        testHooks.busy(-1);
        schedule();
      }
    }, 150);
  };

  const padded = (): [number, number] => {
    const v = S.v;
    const d = v.t1 - v.t0;
    const c = clampView({ t0: v.t0 - d, t1: v.t1 + d }, 0, S.hi);
    return [Math.floor(c.t0), Math.ceil(c.t1)];
  };
  const covers = (w: { a: number; b: number } | null) => !!w && w.a <= S.v.t0 && w.b >= S.v.t1;
  const abs = (t: number) => (base + BigInt(Math.max(0, Math.round(t)))).toString();

  const loadCopies = async (gen: number) => {
    if (ops <= COPIES_ALL) {
      if (S.copiesAll) return;
      const cs = await apiAll<CopyItem>('sessions/' + sid + '/copies', {}, COPIES_ALL + 1000);
      if (gen !== S.gen) return;
      S.copiesAll = copySpans(cs.items, base);
      for (const [k, l] of S.copiesAll) S.copyLanes.set(k, { dev: l.dev, kind: l.kind });
      return;
    }
    if (covers(S.copiesWin) && S.copiesWin!.b - S.copiesWin!.a < (S.v.t1 - S.v.t0) * 6) return;
    const [a, b] = padded();
    const cs = await apiAll<CopyItem>('sessions/' + sid + '/copies', { from: abs(a), to: abs(b) }, 4000);
    if (gen !== S.gen) return;
    const lanes = copySpans(cs.items, base);
    for (const [k, l] of lanes) S.copyLanes.set(k, { dev: l.dev, kind: l.kind });
    S.copiesWin = { a, b, lanes, complete: !cs.more };
  };

  const loadScopes = async (gen: number) => {
    if (!scopes || S.noScopes) return;
    if (covers(S.scopeWin) && S.scopeWin!.b - S.scopeWin!.a < (S.v.t1 - S.v.t0) * 6) return;
    const [a, b] = padded();
    if ((scopes * (b - a)) / S.hi > SCOPES_MAX) {
      S.scopeWin = { a, b, items: [], complete: false, to: a };
      return;
    }
    // the export's scope slices, without kernels and copies (a lane no
    // device has): names, paths and exact times of each instance
    let x: ExportAnswer;
    try {
      x = await api<ExportAnswer>('sessions/' + sid + '/export', {
        from: abs(a),
        to: abs(b),
        lanes: '65535:65535',
        truncate: true,
      });
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) {
        S.noScopes = true; // a server without the export route
        return;
      }
      throw e;
    }
    if (gen !== S.gen) return;
    const items = scopesOf(x, base);
    const to = Number(BigInt(x.otherData.to) - base);
    S.scopeWin = { a, b, items, complete: !x.otherData.truncated, to };
    for (const s of items) S.scopeDepths = Math.max(S.scopeDepths, s.depth + 1);
  };

  const loadCounters = async (gen: number) => {
    if (!S.trackIds.size) return;
    const px = S.W;
    const c = S.counters;
    if (covers(c) && c!.b - c!.a < (S.v.t1 - S.v.t0) * 6 && c!.px === px) return;
    const [a, b] = padded();
    const r = await api<{ series: SysSeries[]; bucket_ns: string }>('sessions/' + sid + '/system', {
      from: abs(a),
      to: abs(b + 1),
      points: Math.min(5000, Math.round((px * (b - a)) / Math.max(1, S.v.t1 - S.v.t0))),
      fields: 'util,sm_active,mem_used,mem_total,power,pcie_tx,pcie_rx',
    });
    if (gen !== S.gen) return;
    const tracks = shapeTracks(r.series, num(r.bucket_ns), base, devices, S.trackIds, interval);
    for (const t of tracks)
      S.trackLanes.set(tLane(t.dev, t.id), { dev: t.dev, track: t.id, label: 'GPU' + t.dev + ' ' + t.label });
    S.counters = { a, b, px, tracks };
  };

  const loadHits = async (gen: number) => {
    const q = S.q;
    if (!q) {
      S.hits = null;
      S.hitTotal = null;
      setHitInfo('');
      return;
    }
    const [a, b] = padded();
    const h = S.hits;
    if (h && h.q === q && covers(h) && h.b - h.a < (S.v.t1 - S.v.t0) * 6) return;
    const ask = async (x: number, y: number): Promise<Stratum> => {
      const p = await api<Page<KernelItem>>('sessions/' + sid + '/kernels', {
        name: q,
        from: abs(x),
        to: abs(y),
        limit: HIT_LIMIT,
      });
      return { a: x, b: y, n: p.items.length, more: !!p.next, at: p.items.map((k) => Number(BigInt(k.ts) - base)) };
    };
    const whole = h && h.q === q ? h.whole : await Promise.all(strata(0, S.hi, HIT_STRATA).map(([x, y]) => ask(x, y)));
    if (gen !== S.gen || S.q !== q) return;
    const view = await Promise.all(strata(a, b, HIT_STRATA).map(([x, y]) => ask(x, y)));
    if (gen !== S.gen || S.q !== q) return;
    if (S.hitTotal === null || !h || h.q !== q) {
      const ag = await apiAll<KernelAgg>('sessions/' + sid + '/kernels/aggregate', { name: q }, 20000);
      if (gen !== S.gen || S.q !== q) return;
      S.hitTotal = ag.items.reduce((s, x) => s + x.count, 0);
    }
    S.hits = { q, a, b, strata: view, whole };
    hitText();
  };

  const hitText = () => {
    const h = S.hits;
    if (!h) return setHitInfo('');
    const iv = hitsIn(h.strata, S.v.t0, S.v.t1);
    setHitInfo(
      (iv.exact ? iv.n.toLocaleString('en-US') : '≥ ' + iv.n.toLocaleString('en-US')) +
        ' in view · ' +
        (S.hitTotal ?? 0).toLocaleString('en-US') +
        ' in total',
    );
  };

  /* ---- drawing ------------------------------------------------------------ */

  const layout = () => {
    const counters = [...S.trackLanes.values()].filter(
      (c) => S.trackIds.has(c.track) && !S.tracksOff.has(tLane(c.dev, c.track)),
    );
    const order = TRACKS.map((t) => t.id);
    counters.sort((a, b) => a.dev - b.dev || order.indexOf(a.track) - order.indexOf(b.track));
    S.lanes = layoutLanes(
      {
        hits: !!S.q,
        scopeDepths: S.scopeDepths,
        threads: [...S.threads],
        kernelLanes: [...S.laneSet.values()],
        copyLanes: [...S.copyLanes.values()],
        counters,
      },
      TOP,
    );
  };

  const draw = () => {
    const c = cv.current;
    if (!c) return;
    const t0 = performance.now();
    const W = Math.max(100, (wrap.current?.clientWidth ?? 900) - LABEL_W - 2);
    if (W !== S.W) {
      S.W = W;
      kick();
    }
    const v = S.v;
    layout();
    const H = lanesBottom(S.lanes, TOP) + 8;
    const dpr = window.devicePixelRatio || 1;
    S.dpr = dpr;
    const cw = W + LABEL_W;
    const dw = Math.round(cw * dpr);
    const dh = Math.round(H * dpr);
    if (c.width !== dw || c.height !== dh) {
      c.width = dw;
      c.height = dh;
      c.style.width = cw + 'px';
      c.style.height = H + 'px';
    }
    const g = c.getContext('2d')!;
    if (!S.raster || S.raster.w !== dw || S.raster.h !== dh)
      S.raster = new Raster(dw, dh, (w, h) => g.createImageData(w, h));
    const r = S.raster;
    r.clear(BG);
    const nsPerPx = (v.t1 - v.t0) / W;
    S.res = Math.min(resFor(nsPerPx), S.maxRes);
    S.segs = segments(v, S.res, (res, i) => S.tiles.get(res, i), S.maxRes);
    const pc = {
      r,
      v,
      x0: LABEL_W * dpr,
      w: W * dpr,
      dpr,
      colors: S.colors!,
      match: S.match,
      boxes: testHooks.on ? ([] as Box[]) : null,
    };
    const labels: Label[] = [];
    const plotX = (t: number) => LABEL_W + xOf(t, v, W);
    // lane backgrounds are painted by each row; labels column
    r.rect(0, TOP * dpr, LABEL_W * dpr, dh, hexColor('#181c24'));
    let painted = 0;
    for (const l of S.lanes) {
      if (l.kind === 'kernel') {
        const ls = paintKernelRow(pc, S.segs, l.key, l.y, l.h);
        painted++;
        for (const x of ls) labels.push(x);
      } else if (l.kind === 'copy') {
        const src = S.copiesAll ?? S.copiesWin?.lanes;
        const spans = src?.get(l.key)?.spans ?? [];
        paintSpans(pc, spans, l.y, l.h, firstFrom(spans, v.t0 - maxDurOf(l.key, spans)));
        if (!S.copiesAll && !covers(S.copiesWin)) hatch(r, pc, l);
      } else if (l.kind === 'api') paintApi(pc, l);
      else if (l.kind === 'scope') paintScope(pc, l);
      else if (l.kind === 'counter') paintCounter(pc, l);
      else if (l.kind === 'hits') paintHits(pc, l);
    }
    paintMini(pc);
    const tPaint = performance.now();
    g.putImageData(r.data!, 0, 0);
    const tPut = performance.now();
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    // axis
    g.font = '11px DejaVu Sans, sans-serif';
    const tk = axisTicks(v.t0, v.t1, W, (s) => g.measureText(s).width);
    g.strokeStyle = '#2c3342';
    g.fillStyle = '#8b94a3';
    g.beginPath();
    for (let i = 0; i < tk.at.length; i++) {
      const x = Math.round(plotX(tk.at[i])) + 0.5;
      g.moveTo(x, MINI_H + AXIS_H - 6);
      g.lineTo(x, MINI_H + AXIS_H);
      g.fillText(tk.labels[i], x + 3, MINI_H + 13);
    }
    g.stroke();
    // lane labels
    for (const l of S.lanes) {
      g.fillStyle = l.kind === 'kernel' ? '#c9d1dd' : '#8b94a3';
      g.fillText(fitText(g, laneLabel(l), LABEL_W - 10), 6, l.y + l.h / 2 + 4);
    }
    // kernel names on wide kernels (whole name, elided only when too long)
    g.fillStyle = '#f2f4f8';
    let nl = 0;
    const texts: TimelineDraw['texts'] = [];
    for (const lb of labels) {
      if (nl > 500) break;
      const full = nameOf(lb.name);
      const text = fitText(g, full, lb.w - 6);
      if (!text) continue;
      g.fillText(text, lb.x + 3, lb.y + lb.h - 7);
      if (testHooks.on) texts.push({ text, full, w: lb.w - 6 });
      nl++;
    }
    drawScopeNames(g, texts);
    drawOverlays(g, W, H);
    if (testHooks.on) {
      const now = performance.now();
      S.phases.push([tPaint - t0, tPut - tPaint, now - tPut]);
      if (S.phases.length > 4000) S.phases.splice(0, 2000);
    }
    S.labels = labels;
    S.boxes = pc.boxes ?? [];
    if (testHooks.on) publish(W, H, painted, nl, performance.now() - t0, tk.labels, tk.at, texts, g.font);
    updateStatus();
  };

  const laneLabel = (l: Lane): string => {
    if (l.kind !== 'counter' || !S.counters) return l.label;
    const tr = S.counters.tracks.find((t) => t.dev === l.dev && t.id === l.track);
    if (!tr) return l.label;
    return tr.cap ? l.label + ' / ' + fmtCounter(tr.id, tr.cap) : l.label;
  };

  const maxDurOf = (_key: string, spans: { dur: number }[]) => {
    let m = 0;
    for (const s of spans) if (s.dur > m) m = s.dur;
    return m;
  };

  const hatch = (r: Raster, pc: { x0: number; w: number; dpr: number }, l: Lane) => {
    for (let x = Math.floor(pc.x0); x < pc.x0 + pc.w; x += 6)
      r.rect(x, (l.y + 1) * pc.dpr, x + 2, (l.y + l.h - 1) * pc.dpr, DIM);
  };

  const paintApi = (pc: Parameters<typeof paintSpans>[0], l: Lane) => {
    const v = S.v;
    const segs = segments(v, S.res, (res, i) => S.calls.get(res, i), S.maxRes);
    pc.r.rowBegin(LANE_BG);
    const k = pc.w / (v.t1 - v.t0);
    const X = (t: number) => pc.x0 + (t - v.t0) * k;
    const sel = S.flow;
    for (const s of segs) {
      const xa = X(s.a);
      const xb = X(s.b);
      if (!s.tile) {
        for (let x = Math.floor(xa); x < xb; x++) if (((x >> 2) & 1) === 0) pc.r.dot(x, hsl(215, 0.1, 0.2));
        continue;
      }
      const th = s.tile.threads.get(l.tid);
      if (!th) continue;
      if (th.calls) {
        for (const c of th.calls) {
          if (c.t >= s.b || c.t + c.dur < s.a) continue;
          const x1 = Math.max(xa, X(c.t));
          const x2 = Math.min(xb, X(c.t + c.dur));
          const col = sel && c.type === 'launch' && c.kid === sel.kid ? hexColor(SEL) : CALL_COLORS[c.type];
          if (x2 - x1 >= 3) pc.r.span(x1, x2, shades(col)[0]);
          pc.r.span(x1, x2 - (x2 - x1 >= 3 ? 1 : 0), col);
        }
      } else {
        const sh = shades(CALL_COLORS.launch);
        for (const col of th.cols) {
          if (col.t >= s.b || col.t + col.res <= s.a) continue;
          pc.r.span(
            Math.max(xa, X(col.t)),
            Math.min(xb, X(col.t + col.res)),
            sh[Math.max(1, Math.round(Math.min(1, col.share) * 8))],
          );
        }
      }
    }
    pc.r.rowCommit((l.y + 1) * pc.dpr, (l.y + l.h - 1) * pc.dpr, Math.floor(pc.x0));
  };

  /* the shortest scope of that depth at t (threads may overlap) */
  const scopeAt = (depth: number, t: number, slop: number) => {
    let best: ScopeSpan | null = null;
    for (const x of scopeSpans(depth))
      if (x.t - slop <= t && t <= x.t + x.dur + slop && (!best || x.dur < best.dur)) best = x;
    return best;
  };
  const scopeSpans = (depth: number) => (S.scopeWin ? S.scopeWin.items.filter((s) => s.depth === depth) : []);

  const paintScope = (pc: Parameters<typeof paintSpans>[0], l: Lane) => {
    const items = scopeSpans(l.depth);
    paintSpans(pc, items, l.y, l.h);
    if (S.scopeWin && !S.scopeWin.complete) {
      // past the last instance the export carried: not loaded
      const v = S.v;
      const x = pc.x0 + Math.max(0, ((Math.max(S.scopeWin.to, v.t0) - v.t0) / (v.t1 - v.t0)) * pc.w);
      for (let xx = Math.floor(x); xx < pc.x0 + pc.w; xx += 6)
        pc.r.rect(xx, (l.y + 1) * pc.dpr, xx + 2, (l.y + l.h - 1) * pc.dpr, DIM);
    }
  };

  const drawScopeNames = (g: CanvasRenderingContext2D, texts: TimelineDraw['texts']) => {
    const v = S.v;
    g.fillStyle = '#e6f2ec';
    for (const l of S.lanes) {
      if (l.kind !== 'scope') continue;
      for (const s of scopeSpans(l.depth)) {
        const x1 = Math.max(0, xOf(s.t, v, S.W));
        const x2 = Math.min(S.W, xOf(s.t + s.dur, v, S.W));
        if (x2 - x1 < 30) continue;
        const text = fitText(g, s.name, x2 - x1 - 6);
        if (!text) continue;
        g.fillText(text, LABEL_W + x1 + 3, l.y + l.h - 4);
        if (testHooks.on) texts.push({ text, full: s.name, w: x2 - x1 - 6 });
      }
    }
  };

  const paintCounter = (pc: Parameters<typeof paintSpans>[0], l: Lane) => {
    const tr = S.counters?.tracks.find((t) => t.dev === l.dev && t.id === l.track);
    const { r, v, x0, w, dpr } = pc;
    r.rect(x0, (l.y + 1) * dpr, x0 + w, (l.y + l.h - 1) * dpr, LANE_BG);
    if (!tr) return;
    const n = Math.floor(w);
    const hs = new Float32Array(n);
    const band = new Float32Array(n);
    const lo = new Float32Array(n);
    const hpx = (l.h - 3) * dpr;
    for (let i = 0; i < n; i++) {
      const t = v.t0 + ((i + 0.5) / w) * (v.t1 - v.t0);
      const p = pointAt(tr, t);
      if (p < 0) {
        hs[i] = NaN;
        continue;
      }
      hs[i] = Math.max(1, (tr.avg[p] / tr.top) * hpx);
      lo[i] = (tr.lo[p] / tr.top) * hpx;
      band[i] = Math.max(0, (tr.hi[p] / tr.top) * hpx - lo[i]);
    }
    const yb = (l.y + l.h - 1) * dpr;
    const col =
      tr.id === 'util' || tr.id === 'sm'
        ? hexColor('#4e9af1')
        : tr.id === 'vram'
          ? hexColor('#5fd08a')
          : tr.id === 'power'
            ? hexColor('#e0607e')
            : hexColor('#b48ef0');
    r.bars(Math.floor(x0), band, yb, shades(col)[1], lo);
    r.bars(Math.floor(x0), hs, yb, col);
    if (tr.cap) {
      const y = Math.round(yb - (tr.cap / tr.top) * hpx);
      r.rect(x0, y - 1, x0 + w, y, hexColor('#d0d6e0'));
    }
  };

  const paintHits = (pc: Parameters<typeof paintSpans>[0], l: Lane) => {
    const { r, v, x0, w, dpr } = pc;
    r.rect(x0, (l.y + 1) * dpr, x0 + w, (l.y + l.h - 1) * dpr, LANE_BG);
    const h = S.hits;
    if (!h) return;
    const d = density(h.strata, v.t0, v.t1, Math.floor(w), -1);
    const yel = hexColor('#ffd54a');
    const dense = shades(yel)[2];
    r.rowBegin(LANE_BG);
    for (let x = 0; x < d.length; x++) if (d[x] !== 0) r.dot(x0 + x, d[x] < 0 ? dense : yel);
    r.rowCommit((l.y + 1) * dpr, (l.y + l.h - 1) * dpr, Math.floor(x0));
  };

  /* the minimap: GPU busy share over the whole session (all kernel lanes
     of the whole-session tile), the hits, and the view as a window */
  const paintMini = (pc: Parameters<typeof paintSpans>[0]) => {
    const { r, x0, w, dpr } = pc;
    r.rect(x0, 0, x0 + w, (MINI_H - 2) * dpr, hexColor('#0f1218'));
    const whole = S.tiles.get(S.maxRes, 0);
    const n = Math.floor(w);
    if (whole && S.mini && S.mini.tile === whole && S.mini.n === n)
      r.bars(Math.floor(x0), S.mini.hs, (MINI_H - 3) * dpr, hexColor('#3d6fb5'));
    else if (whole) {
      const busy = new Float32Array(n);
      const k = n / S.hi;
      let lanes = 0;
      for (const lt of whole.lanes) {
        lanes++;
        for (let i = 0; i < lt.col.length; i++) {
          const t = whole.t0 + lt.col[i] * whole.res;
          const a = Math.floor(t * k);
          const b = Math.max(a + 1, Math.ceil((t + whole.res) * k));
          const share = lt.busy[i] / whole.res;
          for (let x = a; x < b && x < n; x++) busy[x] = Math.max(busy[x], share);
        }
      }
      const hpx = (MINI_H - 6) * dpr;
      const hs = new Float32Array(n);
      for (let i = 0; i < n; i++) hs[i] = busy[i] > 0 ? Math.max(1, Math.min(1, busy[i]) * hpx) : 0;
      S.mini = { tile: whole, n, hs };
      r.bars(Math.floor(x0), hs, (MINI_H - 3) * dpr, hexColor('#3d6fb5'));
      void lanes;
    }
    if (S.hits) {
      const d = density(S.hits.whole, 0, S.hi, n, -1);
      const yel = hexColor('#ffd54a');
      for (let x = 0; x < n; x++)
        if (d[x] !== 0) r.rect(x0 + x, 0, x0 + x + 1, (d[x] < 0 ? 5 : 8) * dpr, d[x] < 0 ? shades(yel)[3] : yel);
    }
  };

  const drawOverlays = (g: CanvasRenderingContext2D, W: number, H: number) => {
    const v = S.v;
    const X = (t: number) => LABEL_W + xOf(t, v, W);
    // minimap window
    const mx0 = LABEL_W + (v.t0 / S.hi) * W;
    const mx1 = LABEL_W + (v.t1 / S.hi) * W;
    g.fillStyle = 'rgba(0,0,0,0.45)';
    g.fillRect(LABEL_W, 0, mx0 - LABEL_W, MINI_H - 2);
    g.fillRect(mx1, 0, LABEL_W + W - mx1, MINI_H - 2);
    g.strokeStyle = '#8fb4ff';
    g.lineWidth = 1;
    g.strokeRect(Math.round(mx0) + 0.5, 0.5, Math.max(2, mx1 - mx0 - 1), MINI_H - 3);
    g.fillStyle = '#8b94a3';
    g.fillText('session', 6, 16);
    g.save();
    g.beginPath();
    g.rect(LABEL_W, TOP - 2, W, H);
    g.clip();
    // area selection
    const a = S.area;
    if (a) {
      g.fillStyle = 'rgba(120,170,255,0.12)';
      g.fillRect(X(a.t0), TOP, Math.max(1, X(a.t1) - X(a.t0)), H - TOP);
      g.strokeStyle = '#78aaff';
      g.beginPath();
      g.moveTo(Math.round(X(a.t0)) + 0.5, TOP);
      g.lineTo(Math.round(X(a.t0)) + 0.5, H);
      g.moveTo(Math.round(X(a.t1)) + 0.5, TOP);
      g.lineTo(Math.round(X(a.t1)) + 0.5, H);
      g.stroke();
      for (const l of S.lanes)
        if (a.lanes.includes(l.key)) {
          g.fillStyle = 'rgba(120,170,255,0.18)';
          g.fillRect(X(a.t0), l.y, Math.max(1, X(a.t1) - X(a.t0)), l.h);
        }
    }
    // selection and its flow (launch call -> kernel)
    const f = S.flow;
    if (f && f.kid === S.selected) {
      const kl = S.lanes.find((l) => l.key === f.key);
      if (kl) {
        g.strokeStyle = SEL;
        g.lineWidth = 2;
        g.strokeRect(X(f.t) - 1, kl.y, Math.max(3, X(f.t + f.dur) - X(f.t) + 2), kl.h);
      }
      const al = f.tid !== null ? S.lanes.find((l) => l.key === aLane(f.tid!)) : null;
      if (kl && al && f.apiT !== null) {
        g.strokeStyle = SEL;
        g.lineWidth = 2;
        g.strokeRect(X(f.apiT) - 1, al.y, Math.max(3, X(f.apiT + f.apiDur) - X(f.apiT) + 2), al.h);
        const sx = X(f.apiT + f.apiDur);
        const sy = al.y + al.h / 2;
        const ex = X(f.t);
        const ey = kl.y + kl.h / 2;
        g.strokeStyle = FLOW;
        g.lineWidth = 1.5;
        g.beginPath();
        g.moveTo(sx, sy);
        const mid = Math.max(12, Math.abs(ey - sy) / 2);
        g.bezierCurveTo(sx + mid, sy, ex - mid, ey, ex, ey);
        g.stroke();
        g.fillStyle = FLOW;
        g.beginPath();
        g.moveTo(ex, ey);
        g.lineTo(ex - 7, ey - 4);
        g.lineTo(ex - 7, ey + 4);
        g.closePath();
        g.fill();
      }
    }
    // marks
    g.setLineDash([4, 3]);
    g.strokeStyle = MARK;
    g.lineWidth = 1;
    for (const m of S.marks) {
      const x = Math.round(X(m)) + 0.5;
      g.beginPath();
      g.moveTo(x, TOP - 2);
      g.lineTo(x, H);
      g.stroke();
    }
    g.setLineDash([]);
    g.restore();
    if (S.marks.length) {
      g.fillStyle = MARK;
      const dec = decimalsFor(niceStep((v.t1 - v.t0) / W));
      const style = styleFor(S.hi);
      const ms = [...S.marks].sort((p, q) => p - q);
      for (let i = 0; i < ms.length; i++) {
        const x = X(ms[i]);
        if (x < LABEL_W || x > LABEL_W + W) continue;
        let t = fmtRel(ms[i], dec, style);
        if (i > 0) t += '  (+' + fmtNs(ms[i] - ms[i - 1]) + ')';
        g.fillText(t, x + 3, TOP + 9);
      }
    }
    // hover time line
    if (S.hover && S.hover.x >= LABEL_W && !S.drag) {
      g.strokeStyle = 'rgba(220,225,235,0.35)';
      g.beginPath();
      g.moveTo(Math.round(S.hover.x) + 0.5, MINI_H);
      g.lineTo(Math.round(S.hover.x) + 0.5, H);
      g.stroke();
    }
    // drag-select in progress
    const d = S.drag;
    if (d && d.area && d.moved && S.hover) {
      g.fillStyle = 'rgba(120,170,255,0.15)';
      const xa = Math.max(LABEL_W, Math.min(d.x, S.hover.x));
      g.fillRect(xa, Math.min(d.y, S.hover.y), Math.abs(S.hover.x - d.x), Math.abs(S.hover.y - d.y));
    }
  };

  const statusRef = useRef('');
  /* the status line, computed and put in the DOM at most 4 times a
     second: counting the kernels in view and a layout of the toolbar every
     frame would cost more than the canvas */
  const updateStatus = () => {
    if (S.statusTimer) return;
    testHooks.busy(1);
    S.statusTimer = window.setTimeout(() => {
      S.statusTimer = 0;
      testHooks.busy(-1);
      const text = statusText();
      if (text !== statusRef.current && statusEl.current) {
        statusRef.current = text;
        statusEl.current.textContent = text;
      }
    }, 250);
  };

  const statusText = () => {
    let loading = 0;
    let exact = 0;
    let summary = 0;
    for (const s of S.segs) {
      if (!s.tile) loading++;
      else
        for (const lt of s.tile.lanes)
          if (lt.exact) exact++;
          else summary++;
    }
    const c = countInView(S.segs, S.v);
    const nsPerPx = (S.v.t1 - S.v.t0) / S.W;
    return (
      (c.exact ? c.n.toLocaleString('en-US') : '≈' + c.n.toLocaleString('en-US')) +
      ' kernels in view · ' +
      fmtNs(nsPerPx) +
      '/px · ' +
      (summary && exact
        ? 'exact kernels where a lane holds few, per-column summary elsewhere'
        : summary
          ? 'per-column summary (every column a kernel ran in is drawn)'
          : exact
            ? 'every kernel drawn'
            : 'no kernels here') +
      (loading ? ' · loading…' : '')
    );
  };

  const publish = (
    W: number,
    H: number,
    painted: number,
    labels: number,
    ms: number,
    ticks: string[],
    tickAt: number[],
    texts: TimelineDraw['texts'],
    font: string,
  ) => {
    S.frames.push(ms);
    if (S.frames.length > 4000) S.frames.splice(0, 2000);
    let loading = 0;
    let exact = 0;
    let summary = 0;
    for (const s of S.segs) {
      if (!s.tile) loading++;
      else
        for (const lt of s.tile.lanes)
          if (lt.exact) exact++;
          else summary++;
    }
    testHooks.set('timeline', {
      t0: S.v.t0,
      t1: S.v.t1,
      base: base.toString(),
      rects: painted,
      labels,
      texts,
      font,
      mode: loading ? 'loading' : summary ? 'summary' : exact ? 'raw' : 'empty',
      ms,
      frames: S.frames,
      phases: S.phases,
      plotX: LABEL_W,
      plotW: W,
      height: H,
      res: S.res,
      ticks,
      tickAt,
      scopes: (S.scopeWin?.items ?? [])
        .filter((x) => x.t < S.v.t1 && x.t + x.dur > S.v.t0)
        .slice(0, 500)
        .map((x) => ({ name: x.name, t: x.t, dur: x.dur, depth: x.depth })),
      follow: S.follow,
      hi: S.hi,
      marks: [...S.marks],
      area: S.area ? { t0: S.area.t0, t1: S.area.t1, lanes: [...S.area.lanes] } : null,
      flow: S.flow && S.flow.kid === S.selected && S.flow.apiT !== null ? { kid: S.flow.kid, tid: S.flow.tid } : null,
      lanes: S.lanes.map((l) => ({ key: l.key, kind: l.kind, y: l.y, h: l.h, label: laneLabel(l) })),
    });
  };

  /* ---- keyboard (Perfetto's hands) ------------------------------------- */

  const keyStep = (now: number) => {
    const dt = S.lastKeyT ? Math.min(50, now - S.lastKeyT) : 16;
    S.lastKeyT = now;
    S.keyVel = Math.min(3, S.keyVel + dt / 400);
    const k = (dt / 16) * (0.4 + S.keyVel);
    const a = S.hover && S.hover.x >= LABEL_W ? Math.min(1, Math.max(0, (S.hover.x - LABEL_W) / S.W)) : 0.5;
    let v = S.v;
    if (S.keys.has('KeyW') || S.keys.has('ArrowUp')) v = zoom(v, Math.pow(0.93, k), a, 0, S.hi);
    if (S.keys.has('KeyS') || S.keys.has('ArrowDown')) v = zoom(v, Math.pow(1 / 0.93, k), a, 0, S.hi);
    if (S.keys.has('KeyA') || S.keys.has('ArrowLeft')) v = pan(v, -0.02 * k, 0, S.hi);
    if (S.keys.has('KeyD') || S.keys.has('ArrowRight')) v = pan(v, 0.02 * k, 0, S.hi);
    if (v !== S.v) setView(v);
  };

  const fitSelection = () => {
    if (S.area) return setView(fitView(S.area.t0, S.area.t1, 0, S.hi));
    const f = S.flow;
    if (f && f.kid === S.selected) {
      const a = f.apiT !== null ? Math.min(f.apiT, f.t) : f.t;
      setView(fitView(a, f.t + f.dur, 0, S.hi));
    } else if (S.selected !== null) S.fitWanted = S.selected;
  };

  const clearAll = () => {
    S.area = null;
    setArea(null);
    cb.current.onPick(null);
    schedule();
  };

  const mark = (shift: boolean) => {
    if (shift) S.marks = [];
    else {
      const t =
        S.hover && S.hover.x >= LABEL_W
          ? tOf(S.hover.x - LABEL_W, S.v, S.W)
          : S.area
            ? S.area.t0
            : (S.v.t0 + S.v.t1) / 2;
      const near = S.marks.findIndex((m) => Math.abs(xOf(m, S.v, S.W) - xOf(t, S.v, S.W)) < 3);
      if (near >= 0) S.marks.splice(near, 1);
      else S.marks = [...S.marks, Math.round(t)].slice(-8);
    }
    schedule();
  };

  /* ---- search: next / previous hit ------------------------------------ */

  const jumpHit = async (dir: 1 | -1) => {
    const q = S.q;
    if (!q) return;
    const f = S.flow && S.flow.kid === S.selected ? S.flow : null;
    const cur = f ? f.t : (S.v.t0 + S.v.t1) / 2;
    testHooks.busy(1);
    try {
      const p = await api<Page<KernelItem>>('sessions/' + sid + '/kernels', {
        name: q,
        ...(dir > 0 ? { from: abs(cur + 1) } : { to: abs(cur), desc: true }),
        limit: 1,
      });
      const k = p.items[0];
      if (!k) {
        setHitInfo(
          (x) => x.replace(/ · no (next|previous) hit$/, '') + ' · no ' + (dir > 0 ? 'next' : 'previous') + ' hit',
        );
        return;
      }
      const t = Number(BigInt(k.ts) - base);
      const d = num(k.dur);
      const span = S.v.t1 - S.v.t0;
      // keep the zoom when the hit fits it; else zoom to the hit
      const v =
        span >= d * 1.2 && span <= Math.max(d * 2000, 1e6)
          ? clampView({ t0: t + d / 2 - span / 2, t1: t + d / 2 + span / 2 }, 0, S.hi)
          : fitView(t, t + d, 0, S.hi);
      setView(v);
      cb.current.onPick(k.kid);
    } finally {
      testHooks.busy(-1);
    }
  };

  /* ---- export ------------------------------------------------------------ */

  const exportRange = async () => {
    const v = S.area ? { t0: S.area.t0, t1: S.area.t1 } : S.v;
    const from = abs(Math.floor(v.t0));
    const to = abs(Math.ceil(v.t1));
    setExportMsg('exporting…');
    testHooks.busy(1);
    try {
      const tok = getToken();
      const url = '/api/v1/sessions/' + sid + '/export?from=' + from + '&to=' + to + '&truncate=true';
      const r = await fetch(url, { headers: tok ? { Authorization: 'Bearer ' + tok } : {} });
      const text = await r.text();
      if (!r.ok) {
        let m = text;
        try {
          m = JSON.parse(text).error || text;
        } catch {
          /* not JSON */
        }
        setExportMsg('export failed: HTTP ' + r.status + ': ' + m);
        return;
      }
      const od = (JSON.parse(text) as ExportAnswer).otherData;
      const blob = new Blob([text], { type: 'application/json' });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = 'gpufl-' + sid.slice(0, 8) + '-' + from + '-' + od.to + '.perfetto.json';
      a.dataset.testid = 'export-link';
      document.body.appendChild(a);
      a.click();
      setTimeout(() => {
        URL.revokeObjectURL(a.href);
        a.remove();
      }, 1000);
      const cut = od.truncated
        ? ' The range holds more than one export carries: the file is complete up to +' +
          fmtRel(Number(BigInt(od.to) - base), 6) +
          ' (narrow the range for the rest).'
        : '';
      setExportMsg(
        'exported ' +
          (od.kernels ?? 0) +
          ' kernels, ' +
          (od.scopes ?? 0) +
          ' scopes (open it in ui.perfetto.dev).' +
          cut,
      );
    } catch (e) {
      setExportMsg('export failed: ' + (e instanceof Error ? e.message : String(e)));
    } finally {
      testHooks.busy(-1);
    }
  };

  /* ---- effects ----------------------------------------------------------- */

  // the session grew (a running one, refreshed by the App every 5 s): the
  // axis extends; in follow (tail) mode the view keeps its width at the end
  useEffect(() => {
    const nh = Math.max(1, span);
    if (nh === S.hi) return;
    const old = S.hi;
    S.hi = nh;
    const whole = S.v.t0 <= 0 && S.v.t1 >= old - 1;
    S.maxRes = maxResFor(nh);
    for (const c of [S.tiles, S.calls]) c.dropFrom(Math.max(0, old - 1), tileSpan);
    // what lay near the old end may have grown: refetch it (drawn until then)
    for (const k of [...S.pending]) S.pending.delete(k);
    S.copiesAll = ops <= COPIES_ALL ? null : S.copiesAll;
    S.counters = null;
    S.scopeWin = null;
    S.hits = null;
    if (S.follow) {
      const w = whole ? nh : S.v.t1 - S.v.t0;
      S.v = clampView({ t0: whole ? 0 : nh - w, t1: nh }, 0, nh);
      cb.current.onView(S.v);
    }
    S.gen++;
    kick();
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the timeline's state lives in st (a ref); only the span is an input here
  }, [span]);

  useEffect(() => {
    if (!running && S.follow) {
      S.follow = false;
      setFollow(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- st is a ref
  }, [running]);

  // follow URL changes made elsewhere (back button, links, System's zoom)
  useEffect(() => {
    const nv = view ?? { t0: 0, t1: S.hi };
    if (Math.abs(nv.t0 - S.v.t0) > 1 || Math.abs(nv.t1 - S.v.t1) > 1) setView(nv, false);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the viewport lives in st (a ref); only a new range in the URL is a reason to move
  }, [view?.t0, view?.t1]);

  useEffect(() => {
    S.q = query;
    const q = query.toLowerCase();
    const cache = new Map<number, boolean>();
    S.match = q
      ? (id: number) => {
          let m = cache.get(id);
          if (m === undefined) {
            m =
              (S.names.get(id) ?? '').toLowerCase().includes(q) || (S.mangled.get(id) ?? '').toLowerCase().includes(q);
            cache.set(id, m);
          }
          return m;
        }
      : null;
    S.hits = null;
    S.hitTotal = null;
    loadSide();
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the search is the only input; the rest is read from st
  }, [query]);

  useEffect(() => {
    S.trackIds = trackIds;
    S.counters = null;
    loadSide();
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- st is a ref
  }, [trackIds]);

  useEffect(() => {
    S.tracksOff = tracksOff;
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- st is a ref
  }, [tracksOff]);

  useEffect(() => {
    S.selected = selected;
    if (S.fitWanted !== selected) S.fitWanted = null;
    if (selected === null) {
      S.flow = null;
      schedule();
      return;
    }
    let live = true;
    testHooks.busy(1);
    api<KernelDetail>('sessions/' + sid + '/kernels/' + selected)
      .then((d) => {
        if (!live) return;
        const t = Number(BigInt(d.ts) - base);
        const hasApi = d.api_enter !== undefined && d.api_enter !== null;
        S.flow = {
          kid: d.kid,
          key: kLane(d.dev, d.stream),
          t,
          dur: num(d.dur),
          tid: d.tid ?? (hasApi ? 0 : null),
          apiT: hasApi ? Number(BigInt(d.api_enter!) - base) : null,
          apiDur: num(d.api_dur),
        };
        if (S.fitWanted === d.kid) {
          S.fitWanted = null;
          fitSelection();
        }
      })
      .catch(() => {
        if (live) S.flow = null;
      })
      .finally(() => {
        testHooks.busy(-1);
        schedule();
      });
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- st is a ref; the selection is the input
  }, [selected]);

  useEffect(() => {
    S.maxRes = maxResFor(S.hi);
    S.W = Math.max(100, (wrap.current?.clientWidth ?? 900) - LABEL_W - 2);
    kick();
    const ro = new ResizeObserver(() => schedule());
    if (wrap.current) ro.observe(wrap.current);
    const c = cv.current!;
    const frac = (x: number) => Math.min(1, Math.max(0, (x - LABEL_W) / S.W));
    // positions relative to the canvas, for events on it or (while
    // dragging) anywhere in the window
    const pos = (e: MouseEvent) => {
      const r = c.getBoundingClientRect();
      return { x: e.clientX - r.left, y: e.clientY - r.top };
    };
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const p = pos(e);
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY))
        setView(pan(S.v, (e.deltaX || e.deltaY) / 1000, 0, S.hi));
      else setView(zoom(S.v, Math.pow(1.0015, e.deltaY), frac(p.x), 0, S.hi));
    };
    const miniJump = (x: number) => {
      const t = ((x - LABEL_W) / S.W) * S.hi;
      const d = S.v.t1 - S.v.t0;
      setView({ t0: t - d / 2, t1: t + d / 2 });
    };
    const onDown = (e: MouseEvent) => {
      if (e.button !== 0) return;
      c.focus({ preventScroll: true });
      const p = pos(e);
      const mini = p.y < MINI_H && p.x >= LABEL_W;
      S.drag = { x: p.x, y: p.y, v: S.v, moved: false, area: e.shiftKey && !mini, mini };
      if (mini) miniJump(p.x);
      e.preventDefault();
    };
    const onMove = (e: MouseEvent) => {
      const p = pos(e);
      const d = S.drag;
      const inside = p.x >= 0 && p.y >= 0 && p.x <= c.clientWidth && p.y <= c.clientHeight;
      if (!d && !inside) {
        if (S.hover) {
          S.hover = null;
          if (tip.current) tip.current.style.display = 'none';
          schedule();
        }
        return;
      }
      S.hover = p;
      if (d) {
        const dx = p.x - d.x;
        if (Math.abs(dx) > 3 || Math.abs(p.y - d.y) > 3) d.moved = true;
        if (d.mini) miniJump(p.x);
        else if (d.area) schedule();
        else if (d.moved) setView(pan(d.v, -dx / S.W, 0, S.hi));
        return;
      }
      hover(p.x, p.y);
      schedule();
    };
    const onUp = (e: MouseEvent) => {
      const d = S.drag;
      S.drag = null;
      if (!d || d.mini) return;
      const p = pos(e);
      if (d.area && d.moved) {
        const ta = tOf(Math.max(0, Math.min(d.x, p.x) - LABEL_W), S.v, S.W);
        const tb = tOf(Math.max(0, Math.max(d.x, p.x) - LABEL_W), S.v, S.W);
        const y0 = Math.min(d.y, p.y);
        const y1 = Math.max(d.y, p.y);
        const lanes = S.lanes.filter((l) => l.y + l.h > y0 && l.y < y1 && (l.kind === 'kernel' || l.kind === 'copy'));
        selectArea(ta, tb, lanes.length ? lanes.map((l) => l.key) : null);
        return;
      }
      if (d.moved) return;
      click(p.x, p.y);
    };
    const typing = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      return (
        !!t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)
      );
    };
    const HELD = ['KeyW', 'KeyA', 'KeyS', 'KeyD', 'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'];
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        if (typing(e)) (e.target as HTMLElement).blur();
        clearAll();
        return;
      }
      if (e.key === 'Enter' && S.q && typing(e) && (e.target as HTMLElement).dataset.testid === 'kernel-filter') {
        e.preventDefault();
        jumpHit(e.shiftKey ? -1 : 1);
        return;
      }
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
      if (HELD.includes(e.code)) {
        e.preventDefault();
        if (!S.keys.size) S.keyVel = 0;
        S.keys.add(e.code);
        schedule();
      } else if (e.code === 'KeyF') fitSelection();
      else if (e.code === 'KeyM') mark(e.shiftKey);
      else if (e.key === '/') {
        e.preventDefault();
        (document.querySelector('[data-testid=kernel-filter]') as HTMLInputElement | null)?.focus();
      } else if (e.key === 'Enter' && S.q) jumpHit(e.shiftKey ? -1 : 1);
    };
    const onKeyUp = (e: KeyboardEvent) => {
      S.keys.delete(e.code);
    };
    const onBlur = () => S.keys.clear();
    c.addEventListener('wheel', onWheel, { passive: false });
    c.addEventListener('mousedown', onDown);
    window.addEventListener('mousemove', onMove);
    window.addEventListener('mouseup', onUp);
    window.addEventListener('keydown', onKey);
    window.addEventListener('keyup', onKeyUp);
    window.addEventListener('blur', onBlur);
    testHooks.set('timelineHits', () => S.boxes.map((b) => ({ ...b, lane: 'kernel', count: 1 })));
    testHooks.set('timelineSet', (t0: number, t1: number) => setView({ t0, t1 }));
    testHooks.set('timelineArea', (t0: number, t1: number, lanes: string[] | null) => selectArea(t0, t1, lanes));
    return () => {
      ro.disconnect();
      c.removeEventListener('wheel', onWheel);
      c.removeEventListener('mousedown', onDown);
      window.removeEventListener('mousemove', onMove);
      window.removeEventListener('mouseup', onUp);
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('keyup', onKeyUp);
      window.removeEventListener('blur', onBlur);
      cancelAnimationFrame(S.frame);
      S.frame = 0;
      for (const t of [S.urlTimer, S.dataTimer, sideTimer.current, S.statusTimer])
        if (t) {
          clearTimeout(t);
          testHooks.busy(-1);
        }
      S.urlTimer = 0;
      S.dataTimer = 0;
      S.statusTimer = 0;
      sideTimer.current = 0;
      S.gen++;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the listeners read everything through st and cb (refs): they are set up once per session, not on every render
  }, [sid]);

  const selectArea = (t0: number, t1: number, lanes: string[] | null) => {
    const all = S.lanes.filter((l) => l.kind === 'kernel' || l.kind === 'copy').map((l) => l.key);
    const a: Area = { t0: Math.max(0, Math.floor(t0)), t1: Math.min(S.hi, Math.ceil(t1)), lanes: lanes ?? all };
    if (a.t1 <= a.t0) return;
    S.area = a;
    setArea(a);
    schedule();
  };

  const click = (x: number, y: number) => {
    const lane = laneAt(S.lanes, y);
    if (!lane || x < LABEL_W) return;
    const t = tOf(x - LABEL_W, S.v, S.W);
    const slop = (2 * (S.v.t1 - S.v.t0)) / S.W;
    if (lane.kind === 'kernel') {
      const p = pickKernel(S.segs, lane.key, t, slop);
      if (!p) return;
      if (p.kind === 'kernel') cb.current.onPick(p.kid);
      else {
        const w = Math.max(p.dur * 16, (S.v.t1 - S.v.t0) / 20);
        setView({ t0: p.t + p.dur / 2 - w / 2, t1: p.t + p.dur / 2 + w / 2 });
      }
    } else if (lane.kind === 'api') {
      const c = callAt(lane.tid, t, slop);
      if (c && c.type === 'launch') cb.current.onPick(c.kid);
      else if (c) setView(fitView(c.t, c.t + Math.max(c.dur, c.gpuT !== null ? c.gpuT + c.gpuDur - c.t : 0), 0, S.hi));
    } else if (lane.kind === 'scope') {
      const s = scopeAt(lane.depth, t, slop);
      if (s) selectArea(s.t, s.t + s.dur, null);
    } else if (lane.kind === 'copy') {
      const src = S.copiesAll ?? S.copiesWin?.lanes;
      const s = src?.get(lane.key)?.spans.find((x) => x.t - slop <= t && t <= x.t + x.dur + slop);
      if (s) setView(fitView(s.t, s.t + s.dur, 0, S.hi));
    }
  };

  const callAt = (tid: number, t: number, slop: number) => {
    const segs = segments(S.v, S.res, (res, i) => S.calls.get(res, i), S.maxRes);
    const s = segs.find((x) => x.a <= t && t < x.b);
    const th = s?.tile?.threads.get(tid);
    if (!th || !th.calls) return null;
    let best = null;
    let bd = Infinity;
    for (const c of th.calls) {
      const d = t < c.t ? c.t - t : t > c.t + c.dur ? t - c.t - c.dur : 0;
      if (d <= slop && d < bd) {
        best = c;
        bd = d;
      }
    }
    return best;
  };

  const hover = (x: number, y: number) => {
    const el = tip.current;
    if (!el) return;
    const lane = laneAt(S.lanes, y);
    if (x < LABEL_W || y < MINI_H) {
      el.style.display = 'none';
      return;
    }
    const t = tOf(x - LABEL_W, S.v, S.W);
    const slop = (2 * (S.v.t1 - S.v.t0)) / S.W;
    const dec = decimalsFor(niceStep((S.v.t1 - S.v.t0) / S.W));
    const style = styleFor(S.hi);
    const when =
      '+' + fmtRel(Math.max(0, t), dec, style) + ' · ' + fmtWallNs(base + BigInt(Math.max(0, Math.round(t))));
    let lines: string[] = [];
    if (lane?.kind === 'kernel') {
      const p = pickKernel(S.segs, lane.key, t, slop);
      if (p?.kind === 'kernel')
        lines = [
          nameOf(p.name),
          'kernel ' + p.kid + ' · corr ' + p.corr + ' · start +' + fmtRel(p.t, 9, style) + ' · ' + fmtNs(p.dur),
          'click: select (inspector, launch arrow)',
        ];
      else if (p)
        lines = [
          p.n +
            ' kernel' +
            (p.n === 1 ? '' : 's') +
            ' started in this column · busy ' +
            fmtNs(p.busy) +
            ' of ' +
            fmtNs(p.dur),
          'longest: ' + nameOf(p.name),
          'summary column · click: zoom in',
        ];
    } else if (lane?.kind === 'api') {
      const c = callAt(lane.tid, t, slop);
      if (c)
        lines = [
          c.type +
            (c.kind ? ' ' + c.kind : '') +
            (c.bytes ? ' ' + fmtBytes(c.bytes) : '') +
            ' · API call ' +
            fmtNs(c.dur),
          'corr ' +
            c.corr +
            (c.type === 'launch' ? ' · kernel ' + c.kid : '') +
            (c.gpuT !== null
              ? ' · GPU start +' + fmtRel(c.gpuT, 9, style) + ' (' + fmtNs(c.gpuT - c.t) + ' after the call began)'
              : ''),
          c.type === 'launch' ? 'click: select its kernel' : 'click: zoom to it',
        ];
    } else if (lane?.kind === 'scope') {
      const s = scopeAt(lane.depth, t, slop);
      if (s) lines = [s.path, 'scope · ' + fmtNs(s.dur) + ' · thread ' + s.tid, 'click: select its range'];
    } else if (lane?.kind === 'copy') {
      const src = S.copiesAll ?? S.copiesWin?.lanes;
      const s = src?.get(lane.key)?.spans.find((x) => x.t - slop <= t && t <= x.t + x.dur + slop);
      if (s)
        lines = [
          s.kind + (s.bytes ? ' ' + fmtBytes(s.bytes) : '') + ' · ' + fmtNs(s.dur),
          s.bytes && s.dur ? (s.bytes / s.dur).toFixed(2) + ' GB/s' : '',
        ].filter(Boolean);
    } else if (lane?.kind === 'counter') {
      const tr = S.counters?.tracks.find((q) => q.dev === lane.dev && q.id === lane.track);
      const i = tr ? pointAt(tr, t) : -1;
      if (tr && i >= 0)
        lines = [
          lane.label + ': ' + fmtCounter(tr.id, tr.avg[i]) + (tr.cap ? ' of ' + fmtCounter(tr.id, tr.cap) : ''),
          'min ' + fmtCounter(tr.id, tr.lo[i]) + ' · max ' + fmtCounter(tr.id, tr.hi[i]),
        ];
    }
    el.textContent = [...lines, when].join('\n');
    el.style.display = 'block';
    el.style.left = Math.min(x + 14, S.W + LABEL_W - 420) + 'px';
    el.style.top = y + 16 + 'px';
  };

  const btn = (f: () => View) => () => setView(f());
  const hi = S.hi;
  return (
    <div className="timeline" data-testid="timeline">
      <div className="toolbar">
        <button data-testid="zoom-in" title="W" onClick={btn(() => zoom(S.v, 0.5, 0.5, 0, S.hi))}>
          Zoom in
        </button>
        <button data-testid="zoom-out" title="S" onClick={btn(() => zoom(S.v, 2, 0.5, 0, S.hi))}>
          Zoom out
        </button>
        <button data-testid="pan-left" title="A" onClick={btn(() => pan(S.v, -0.25, 0, S.hi))}>
          ◀
        </button>
        <button data-testid="pan-right" title="D" onClick={btn(() => pan(S.v, 0.25, 0, S.hi))}>
          ▶
        </button>
        <button data-testid="zoom-reset" onClick={btn(() => ({ t0: 0, t1: hi }))}>
          Whole session
        </button>
        {running && (
          <button
            data-testid="live"
            className={'live' + (follow ? ' on' : '')}
            title={
              follow ? 'following the running session (pan away to stop)' : 'click to follow the end of the session'
            }
            onClick={() => {
              S.follow = true;
              setFollow(true);
              const w = S.v.t1 - S.v.t0;
              setView({ t0: S.hi - w, t1: S.hi }, false);
            }}
          >
            {follow ? '● LIVE' : '○ LIVE (paused)'}
          </button>
        )}
        <button data-testid="export" onClick={exportRange} title="the selected range (or the view) as a Perfetto trace">
          Export to Perfetto
        </button>
        {query && (
          <span className="hitnav" data-testid="hit-nav">
            <button data-testid="hit-prev" title="Shift+Enter" onClick={() => jumpHit(-1)}>
              ◀ hit
            </button>
            <button data-testid="hit-next" title="Enter" onClick={() => jumpHit(1)}>
              hit ▶
            </button>
            <span className="dim" data-testid="hit-count">
              {hitInfo || 'searching…'}
            </span>
          </span>
        )}
        <span className="dim" data-testid="timeline-status" ref={statusEl}>
          loading the timeline…
        </span>
      </div>
      <div className="toolbar toggles">
        <span className="dim">counters:</span>
        {TRACKS.map((t) => (
          <label key={t.id}>
            <input
              type="checkbox"
              data-testid={'track-' + t.id}
              checked={trackIds.has(t.id)}
              onChange={() =>
                setTrackIds((o) => {
                  const n = new Set(o);
                  if (n.has(t.id)) n.delete(t.id);
                  else n.add(t.id);
                  return n;
                })
              }
            />{' '}
            {t.label}
          </label>
        ))}
        {devices.length > 1 &&
          devices.map((d) => (
            <span key={d.id} className="dev-tracks">
              <span className="dim">GPU{d.id}:</span>
              {TRACKS.map((t) => {
                const k = tLane(d.id, t.id);
                return (
                  <label key={k} title={'GPU' + d.id + ' ' + t.label}>
                    <input
                      type="checkbox"
                      data-testid={'track-' + d.id + '-' + t.id}
                      disabled={!trackIds.has(t.id)}
                      checked={trackIds.has(t.id) && !tracksOff.has(k)}
                      onChange={() =>
                        setTracksOff((o) => {
                          const n = new Set(o);
                          if (n.has(k)) n.delete(k);
                          else n.add(k);
                          return n;
                        })
                      }
                    />
                    {t.id}
                  </label>
                );
              })}
            </span>
          ))}
        <span className="dim hint">
          W/S zoom · A/D pan · drag: pan · shift+drag: select a range · F fit · M mark · / search · Esc clear
        </span>
      </div>
      {err && (
        <div className="error" data-testid="error">
          Timeline: {err}
        </div>
      )}
      {exportMsg && (
        <div className="dim" data-testid="export-msg">
          {exportMsg}
        </div>
      )}
      <div className="tlwrap" ref={wrap}>
        <canvas ref={cv} tabIndex={0} data-testid="timeline-canvas" />
        <div className="tip" ref={tip} />
      </div>
      {area && (
        <AreaPanel
          sid={sid}
          base={base}
          area={area}
          names={S.names}
          onClose={clearAll}
          onFit={() => setView(fitView(area.t0, area.t1, 0, S.hi))}
        />
      )}
    </div>
  );
}

/* A label cut to w px with an ellipsis.  Widths are summed from each
   character's advance, measured once per font (measureText per label costs
   ~8 µs, too much for hundreds of labels a frame; one average character
   width let "sm90_xmma_gemm_..." run 50 px into the next kernel).  One
   pixel is kept for kerning and rounding. */
const charW = new Map<string, Map<number, number>>();
function fitText(g: CanvasRenderingContext2D, s: string, w: number): string {
  if (w < 14) return '';
  let m = charW.get(g.font);
  if (!m) {
    m = new Map();
    charW.set(g.font, m);
  }
  const cw = (code: number) => {
    let x = m.get(code);
    if (x === undefined) {
      x = g.measureText(String.fromCharCode(code)).width;
      m.set(code, x);
    }
    return x;
  };
  const room = w - 1;
  const ell = cw(0x2026);
  let sum = 0;
  let n = -1; // the longest prefix that fits with an ellipsis after it
  for (let i = 0; i < s.length; i++) {
    const c = cw(s.charCodeAt(i));
    if (n < 0 && sum + c + ell > room) n = i;
    sum += c;
    if (sum > room) return n >= 2 ? s.slice(0, n) + '…' : '';
  }
  return s;
}

function firstFrom(spans: { t: number }[], t: number): number {
  let lo = 0;
  let hi = spans.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (spans[m].t < t) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/* the resolution whose single tile holds the whole session */
function maxResFor(hi: number): number {
  let r = 1;
  while (r * TILE_COLS < hi) r *= 2;
  return r;
}

export function viewFromUrl(from: string | undefined, to: string | undefined, base: bigint): View | null {
  if (!from || !to) return null;
  return { t0: Number(BigInt(from) - base), t1: Number(BigInt(to) - base) };
}

export { cLane, sLane, tLane, HITS_LANE };
