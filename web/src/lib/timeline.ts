// timeline.ts - the kernel timeline's model: lanes and their layout, the
// viewport and its transform, which tile draws which stretch of the view,
// how a lane is painted from tiles (exact kernels or summary columns), and
// what is under the pointer.
//
// All times here are ns offsets (Numbers) from the session's first event;
// absolute epoch-ns values stay bigint/strings elsewhere (api.ts).
import { BG, LANE_BG, Raster, hsl, nameHue, shadeIndex, shades, SHADES } from './raster';
import { bestTile, kLane, LaneTile, Tile, tileSpan } from './tiles';

export type LaneKind = 'hits' | 'scope' | 'api' | 'kernel' | 'copy' | 'counter';

export interface Lane {
  key: string;
  kind: LaneKind;
  dev: number; // -1: not a device's
  stream: number; // kernel lanes
  tid: number; // API lanes
  depth: number; // scope lanes
  track: string; // counter lanes: the track id; copy lanes: the kind
  label: string;
  y: number;
  h: number;
}

export interface View {
  t0: number;
  t1: number;
}

export const LANE_H: Record<LaneKind, number> = { hits: 10, scope: 16, api: 16, kernel: 22, copy: 16, counter: 30 };
export const GAP = 2;
/* the narrowest view: 100 ns (ticks stay distinct down to it) */
export const MIN_SPAN = 100;

export { kLane };
export const cLane = (dev: number, kind: string) => 'c' + dev + ':' + kind;
export const aLane = (tid: number) => 'a' + tid;
export const sLane = (depth: number) => 's' + depth;
export const tLane = (dev: number, track: string) => 't' + dev + ':' + track;
export const HITS_LANE = 'hits';

export interface LaneSpec {
  hits: boolean;
  scopeDepths: number;
  threads: number[];
  kernelLanes: { dev: number; stream: number }[];
  copyLanes: { dev: number; kind: string }[];
  counters: { dev: number; track: string; label: string }[];
}

/* Lanes in display order: search hits, scope depths, the API lane of each
   CPU thread, then per device its kernel lanes by stream, its copy lanes
   by kind and its counter tracks (on the same time axis). */
export function layoutLanes(spec: LaneSpec, top = 0): Lane[] {
  const out: Lane[] = [];
  let y = top;
  const add = (l: Omit<Lane, 'y' | 'h'>) => {
    const h = LANE_H[l.kind];
    out.push({ ...l, y, h });
    y += h + GAP;
  };
  const none = { dev: -1, stream: 0, tid: 0, depth: 0, track: '' };
  if (spec.hits) add({ ...none, key: HITS_LANE, kind: 'hits', label: 'search hits' });
  for (let d = 0; d < spec.scopeDepths; d++)
    add({ ...none, key: sLane(d), kind: 'scope', depth: d, label: d ? 'scopes · depth ' + (d + 1) : 'scopes' });
  for (const tid of [...spec.threads].sort((a, b) => a - b))
    add({
      ...none,
      key: aLane(tid),
      kind: 'api',
      tid,
      label: tid ? 'CUDA API · thread ' + tid : 'CUDA API · thread ?',
    });
  const devs = new Set<number>();
  spec.kernelLanes.forEach((l) => devs.add(l.dev));
  spec.copyLanes.forEach((l) => devs.add(l.dev));
  spec.counters.forEach((l) => devs.add(l.dev));
  const seen = new Set<string>();
  for (const d of [...devs].sort((a, b) => a - b)) {
    for (const l of spec.kernelLanes.filter((x) => x.dev === d).sort((a, b) => a.stream - b.stream)) {
      const key = kLane(d, l.stream);
      if (seen.has(key)) continue;
      seen.add(key);
      add({ ...none, key, kind: 'kernel', dev: d, stream: l.stream, label: 'GPU' + d + ' stream ' + l.stream });
    }
    for (const l of spec.copyLanes.filter((x) => x.dev === d).sort((a, b) => (a.kind < b.kind ? -1 : 1))) {
      const key = cLane(d, l.kind);
      if (seen.has(key)) continue;
      seen.add(key);
      add({ ...none, key, kind: 'copy', dev: d, track: l.kind, label: 'GPU' + d + ' ' + l.kind });
    }
    for (const c of spec.counters.filter((x) => x.dev === d)) {
      const key = tLane(d, c.track);
      if (seen.has(key)) continue;
      seen.add(key);
      add({ ...none, key, kind: 'counter', dev: d, track: c.track, label: c.label });
    }
  }
  return out;
}

export function lanesBottom(lanes: Lane[], top: number): number {
  return lanes.length ? lanes[lanes.length - 1].y + lanes[lanes.length - 1].h : top;
}

/* ---- viewport ---------------------------------------------------------- */

export function xOf(t: number, v: View, width: number): number {
  return ((t - v.t0) / (v.t1 - v.t0)) * width;
}

export function tOf(x: number, v: View, width: number): number {
  return v.t0 + (x / width) * (v.t1 - v.t0);
}

/* Zoom by factor (>1 zooms out) around the time at fraction a (0..1) of the
   view; never narrower than MIN_SPAN nor outside [lo, hi] when it fits. */
export function zoom(v: View, factor: number, a: number, lo: number, hi: number): View {
  const span = v.t1 - v.t0;
  let ns = Math.max(MIN_SPAN, span * factor);
  if (ns > hi - lo) ns = hi - lo;
  const anchor = v.t0 + a * span;
  const t0 = anchor - a * ns;
  return clampView({ t0, t1: t0 + ns }, lo, hi);
}

export function pan(v: View, dxFrac: number, lo: number, hi: number): View {
  const d = (v.t1 - v.t0) * dxFrac;
  return clampView({ t0: v.t0 + d, t1: v.t1 + d }, lo, hi);
}

export function clampView(v: View, lo: number, hi: number): View {
  let span = v.t1 - v.t0;
  if (!(span > 0)) span = MIN_SPAN;
  if (span >= hi - lo) return { t0: lo, t1: hi };
  if (v.t0 < lo) return { t0: lo, t1: lo + span };
  if (v.t1 > hi) return { t0: hi - span, t1: hi };
  return v;
}

/* A view around [a, b) with 10 % room each side, at least MIN_SPAN wide. */
export function fitView(a: number, b: number, lo: number, hi: number): View {
  const d = Math.max(MIN_SPAN, b - a);
  const c = (a + b) / 2;
  return clampView({ t0: c - d * 0.6, t1: c + d * 0.6 }, lo, hi);
}

/* ---- which tile draws what --------------------------------------------- */

export interface Seg<T> {
  a: number;
  b: number;
  tile: T | null; // null: nothing loaded for [a, b) yet
}

/* The view cut into stretches, each drawn from the best loaded tile
   (bestTile) or marked as not loaded. */
export function segments<T extends { t0: number; t1: number }>(
  v: View,
  res: number,
  get: (res: number, idx: number) => T | undefined,
  maxRes: number,
): Seg<T>[] {
  const out: Seg<T>[] = [];
  let t = Math.max(0, v.t0);
  for (let guard = 0; t < v.t1 && guard < 4096; guard++) {
    const tile = bestTile(get, res, t, maxRes);
    let b: number;
    if (tile) b = Math.min(tile.t1, v.t1);
    else {
      const s = tileSpan(res);
      b = Math.min((Math.floor(t / s) + 1) * s, v.t1);
    }
    if (b <= t) b = t + 1;
    const last = out[out.length - 1];
    if (last && last.tile === tile) last.b = b;
    else out.push({ a: t, b, tile });
    t = b;
  }
  return out;
}

/* ---- painting ---------------------------------------------------------- */

/* Colours by name id (display name hashed), and dimmed ones for kernels a
   search does not match. */
export class NameColors {
  private c = new Map<number, number>();
  constructor(private nameOf: (id: number) => string) {}
  get(id: number): number {
    let v = this.c.get(id);
    if (v === undefined) {
      v = hsl(nameHue(this.nameOf(id)), 0.55, 0.5);
      this.c.set(id, v);
    }
    return v;
  }
  clear(): void {
    this.c.clear();
  }
}

export const DIM = hsl(215, 0.08, 0.3);
export const LOADING = hsl(215, 0.1, 0.2);

/* A label to write over an exact kernel wide enough for one. */
export interface Label {
  x: number; // css px, in the plot
  w: number;
  y: number;
  h: number;
  name: number;
  kid: number;
}

/* Where an exact kernel was drawn (for the browser tests: test hooks only). */
export interface Box {
  x: number; // css px from the canvas' left
  y: number;
  w: number;
  h: number;
  id: number;
  lane: string;
}

export interface PaintCtx {
  r: Raster;
  v: View;
  x0: number; // plot left, device px
  w: number; // plot width, device px
  dpr: number;
  colors: NameColors;
  match: ((name: number) => boolean) | null; // search: others are dimmed (exact kernels only)
  boxes?: Box[] | null;
}

/* The row of one kernel lane, from the tiles of segs: exact kernels one by
   one (a 1-px gap between neighbours wider than 3 px), summary columns
   shaded by their busy share; a stretch with no tile loaded is hatched as
   loading.  Returns the labels for kernels >= 40 css px wide. */
export function paintKernelRow(p: PaintCtx, segs: Seg<Tile>[], key: string, y: number, h: number): Label[] {
  const { r, v, x0, w, dpr } = p;
  const k = w / (v.t1 - v.t0);
  const X = (t: number) => x0 + (t - v.t0) * k;
  const labels: Label[] = [];
  r.rowBegin(LANE_BG);
  for (const s of segs) {
    const xa = X(s.a);
    const xb = X(s.b);
    if (!s.tile) {
      // stripes: every 4th pixel, so "not loaded" never reads as idle
      for (let x = Math.floor(xa); x < xb; x++) if (((x >> 2) & 1) === 0) r.dot(x, LOADING);
      continue;
    }
    const lt = s.tile.byKey.get(key);
    if (!lt) continue;
    if (lt.exact) paintExact(p, lt, s.a, s.b, X, xa, xb, labels, y, h, key);
    else paintColumns(p, lt, s.tile, s.a, s.b, X, xa, xb);
  }
  r.rowCommit((y + 1) * dpr, (y + h - 1) * dpr, Math.floor(x0));
  return labels;
}

function lowerBound(a: Float64Array | Int32Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (a[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo;
}

function paintExact(
  p: PaintCtx,
  lt: LaneTile,
  a: number,
  b: number,
  X: (t: number) => number,
  xa: number,
  xb: number,
  labels: Label[],
  y: number,
  h: number,
  key: string,
): void {
  const { r, colors, match, dpr, boxes } = p;
  // kernels are in ts order; one that started up to maxDur earlier may
  // still run into [a, b)
  let i = lowerBound(lt.kt, a - lt.maxDur);
  const n = lt.kt.length;
  for (; i < n; i++) {
    const t = lt.kt[i];
    if (t >= b) break;
    const e = t + lt.kd[i];
    if (e < a || (e === a && lt.kd[i] > 0)) continue;
    let x1 = X(t);
    let x2 = X(e);
    if (x1 < xa) x1 = xa;
    if (x2 > xb) x2 = xb;
    const nm = lt.kname[i];
    const c = match && !match(nm) ? DIM : colors.get(nm);
    if (x2 - x1 >= 3) {
      // the last pixel a darker edge, not a gap: neighbours stay apart and
      // every pixel a kernel occupies is drawn
      r.span(x1, x2, shades(c)[0]);
      r.span(x1, x2 - 1, c);
      if (x2 - x1 >= 40 * dpr && labels.length < 600)
        labels.push({ x: x1 / dpr, w: (x2 - x1) / dpr, y, h, name: nm, kid: lt.kid[i] });
    } else r.span(x1, x2, c);
    if (boxes && boxes.length < 20000)
      boxes.push({ x: x1 / dpr, y, w: Math.max(1, x2 - x1) / dpr, h, id: lt.kid[i], lane: key });
  }
}

function paintColumns(
  p: PaintCtx,
  lt: LaneTile,
  tile: Tile,
  a: number,
  b: number,
  X: (t: number) => number,
  xa: number,
  xb: number,
): void {
  const { r, colors } = p;
  const res = tile.res;
  const c0 = Math.floor((a - tile.t0) / res);
  const c1 = Math.ceil((b - tile.t0) / res);
  for (let i = lowerBound(lt.col, c0); i < lt.col.length && lt.col[i] < c1; i++) {
    const ct = tile.t0 + lt.col[i] * res;
    let x1 = X(ct);
    let x2 = X(ct + res);
    if (x1 < xa) x1 = xa;
    if (x2 > xb) x2 = xb;
    const sh = shades(colors.get(lt.top[i]));
    const si = shadeIndex(lt.busy[i] / res);
    r.span(x1, x2, sh[lt.n[i] > 0 || lt.busy[i] > 0 ? Math.max(1, si) : 0]);
  }
}

/* Items of the other lanes (copies, API calls, scopes): start, duration,
   colour; painted like exact kernels. */
export interface Span {
  t: number;
  dur: number;
  color: number;
}

export function paintSpans(p: PaintCtx, spans: Span[], y: number, h: number, from = 0): void {
  const { r, v, x0, w, dpr } = p;
  const k = w / (v.t1 - v.t0);
  r.rowBegin(LANE_BG);
  for (let i = from; i < spans.length; i++) {
    const s = spans[i];
    if (s.t >= v.t1) break;
    if (s.t + s.dur < v.t0) continue;
    let x1 = x0 + (s.t - v.t0) * k;
    let x2 = x0 + (s.t + s.dur - v.t0) * k;
    if (x1 < x0) x1 = x0;
    if (x2 > x0 + w) x2 = x0 + w;
    if (x2 - x1 >= 3) r.span(x1, x2, shades(s.color)[0]);
    r.span(x1, x2 - (x2 - x1 >= 3 ? 1 : 0), s.color);
  }
  r.rowCommit((y + 1) * dpr, (y + h - 1) * dpr, Math.floor(x0));
}

/* Columns of a summary (API calls of a thread, search hits): [t, t+res)
   with a share 0..1 of the column busy, in colour c. */
export function paintShares(
  p: PaintCtx,
  cols: { t: number; res: number; share: number }[],
  c: number,
  y: number,
  h: number,
  keepRow = false,
): void {
  const { r, v, x0, w, dpr } = p;
  const k = w / (v.t1 - v.t0);
  if (!keepRow) r.rowBegin(LANE_BG);
  const sh = shades(c);
  for (const col of cols) {
    if (col.t >= v.t1 || col.t + col.res < v.t0) continue;
    let x1 = x0 + (col.t - v.t0) * k;
    let x2 = x0 + (col.t + col.res - v.t0) * k;
    if (x1 < x0) x1 = x0;
    if (x2 > x0 + w) x2 = x0 + w;
    r.span(x1, x2, sh[Math.max(1, shadeIndex(col.share))]);
  }
  r.rowCommit((y + 1) * dpr, (y + h - 1) * dpr, Math.floor(x0));
}

export { BG, LANE_BG, SHADES };

/* ---- picking ----------------------------------------------------------- */

export type Picked =
  | { kind: 'kernel'; kid: number; t: number; dur: number; name: number; corr: number }
  | { kind: 'column'; t: number; dur: number; n: number; busy: number; name: number };

/* What lane `key` shows at time t (with a slop in ns): an exact kernel, or
   the summary column. */
export function pickKernel(segs: Seg<Tile>[], key: string, t: number, slop: number): Picked | null {
  const s = segs.find((x) => x.a <= t && t < x.b);
  if (!s || !s.tile) return null;
  const lt = s.tile.byKey.get(key);
  if (!lt) return null;
  if (lt.exact) {
    let best = -1;
    let bestD = Infinity;
    for (let i = lowerBound(lt.kt, t - lt.maxDur - slop); i < lt.kt.length && lt.kt[i] <= t + slop; i++) {
      const a = lt.kt[i];
      const e = a + lt.kd[i];
      const d = t < a ? a - t : t > e ? t - e : 0;
      if (d <= slop && (d < bestD || (d === bestD && best >= 0 && lt.kd[i] > lt.kd[best]))) {
        best = i;
        bestD = d;
      }
    }
    if (best < 0) return null;
    return {
      kind: 'kernel',
      kid: lt.kid[best],
      t: lt.kt[best],
      dur: lt.kd[best],
      name: lt.kname[best],
      corr: lt.kcorr[best],
    };
  }
  const res = s.tile.res;
  const c = Math.floor((t - s.tile.t0) / res);
  const cs = Math.max(0, Math.floor(slop / res));
  for (let d = 0; d <= cs; d++)
    for (const cc of d ? [c - d, c + d] : [c]) {
      const i = lowerBound(lt.col, cc);
      if (i < lt.col.length && lt.col[i] === cc)
        return { kind: 'column', t: s.tile.t0 + cc * res, dur: res, n: lt.n[i], busy: lt.busy[i], name: lt.top[i] };
    }
  return null;
}

/* Where an exact kernel is drawn, if it is: its tile lane's kernel row. */
export function findKernel(segs: Seg<Tile>[], kid: number): { key: string; t: number; dur: number } | null {
  for (const s of segs) {
    if (!s.tile) continue;
    for (const lt of s.tile.lanes) {
      if (!lt.exact) continue;
      for (let i = 0; i < lt.kid.length; i++) if (lt.kid[i] === kid) return { key: lt.key, t: lt.kt[i], dur: lt.kd[i] };
    }
  }
  return null;
}

/* Kernels the loaded tiles say start inside [t0, t1) (exact where the
   tiles are; from the columns' counts elsewhere). */
export function countInView(segs: Seg<Tile>[], v: View): { n: number; exact: boolean } {
  let n = 0;
  let exact = true;
  for (const s of segs) {
    if (!s.tile) {
      exact = false;
      continue;
    }
    const a = Math.max(s.a, v.t0);
    const b = Math.min(s.b, v.t1);
    for (const lt of s.tile.lanes) {
      if (lt.exact) {
        for (let i = lowerBound(lt.kt, a); i < lt.kt.length && lt.kt[i] < b; i++) n++;
      } else {
        exact = false;
        const res = s.tile.res;
        const c0 = Math.floor((a - s.tile.t0) / res);
        const c1 = Math.ceil((b - s.tile.t0) / res);
        for (let i = lowerBound(lt.col, c0); i < lt.col.length && lt.col[i] < c1; i++) n += lt.n[i];
      }
    }
  }
  return { n, exact };
}
