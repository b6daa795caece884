// tiles.ts - the kernel timeline's data, tiled by time (docs/ui.md
// "Kernels", docs/api.md "GET .../timeline").
//
// A tile is TILE_COLS columns of `res` ns each (res a power of two), the
// columns of [idx*res*TILE_COLS, (idx+1)*res*TILE_COLS) from the session's
// first event.  The server answers a tile with, per lane, either every
// kernel that occupies it (`exact`) or its columns (kernels started, busy
// ns, the longest kernel's name), and it lists every column a kernel
// occupies: a tile is complete at any zoom, drawn exactly or as a summary,
// never a partial list drawn as if complete.  Tiles are cached by (res,
// idx), so panning back and forth and zooming through the same levels
// reuse them (Perfetto's quantized, padded windows).
import { Dec } from './api';

export const TILE_COLS = 1024;
/* kernels per lane per tile the server lists one by one */
export const TILE_EXACT = 4096;

/* ns per column for a view of nsPerPx: the power of two at or below it
   (1 to 2 columns per pixel; Perfetto's calculateResolution) */
export function resFor(nsPerPx: number): number {
  if (!(nsPerPx > 1)) return 1;
  return Math.pow(2, Math.floor(Math.log2(nsPerPx)));
}

export function tileSpan(res: number): number {
  return res * TILE_COLS;
}

/* tile indices covering [t0, t1) (offsets), with `pad` more on each side */
export function tilesFor(t0: number, t1: number, res: number, pad = 0, hi = Infinity): number[] {
  const s = tileSpan(res);
  const a = Math.max(0, Math.floor(t0 / s) - pad);
  const b = Math.min(Math.floor(Math.max(t0, t1 - 1) / s) + pad, Math.floor(Math.max(0, hi - 1) / s));
  const out: number[] = [];
  for (let i = a; i <= b; i++) out.push(i);
  return out;
}

/* The server's answer for one window (docs/api.md). */
export interface TimelineTileAnswer {
  from: Dec;
  to: Dec;
  width: number;
  bucket_ns: Dec;
  level: Dec | 'raw';
  kernels_in_window?: number;
  lanes: {
    dev: number;
    stream: number;
    exact?: boolean;
    buckets: [number, number, Dec, number][];
    kernels?: [number, Dec, Dec, number, number][];
  }[];
  names: Record<string, string>;
  mangled?: Record<string, string>;
}

/* One lane of one tile: its columns, and its kernels when exact. */
export interface LaneTile {
  key: string;
  dev: number;
  stream: number;
  exact: boolean;
  // columns (index within the tile), parallel arrays
  col: Int32Array;
  n: Float64Array; // kernels started
  busy: Float64Array; // ns
  top: Int32Array; // name id of the longest kernel
  // exact kernels, ts order (offsets from base)
  kt: Float64Array;
  kd: Float64Array;
  kname: Int32Array;
  kid: Int32Array;
  kcorr: Int32Array;
  maxDur: number; // the longest exact kernel (how far back one may start and still run here)
}

export interface Tile {
  res: number;
  idx: number;
  t0: number; // offsets
  t1: number;
  raw: boolean; // the server read the kernels (level raw)
  lanes: LaneTile[];
  byKey: Map<string, LaneTile>;
}

export const kLane = (dev: number, stream: number) => 'k' + dev + ':' + stream;

/* The answer as a tile: typed arrays, offsets from base (ns). */
export function parseTile(
  a: TimelineTileAnswer,
  res: number,
  idx: number,
  base: bigint,
  names: Map<number, string>,
  mangled: Map<number, string>,
): Tile {
  const t0 = idx * tileSpan(res);
  for (const [k, v] of Object.entries(a.names)) names.set(Number(k), v);
  if (a.mangled) for (const [k, v] of Object.entries(a.mangled)) mangled.set(Number(k), v);
  const lanes: LaneTile[] = a.lanes.map((l) => {
    const nb = l.buckets.length;
    const col = new Int32Array(nb);
    const n = new Float64Array(nb);
    const busy = new Float64Array(nb);
    const top = new Int32Array(nb);
    for (let i = 0; i < nb; i++) {
      const b = l.buckets[i];
      col[i] = b[0];
      n[i] = b[1];
      busy[i] = Number(b[2]);
      top[i] = b[3];
    }
    const ks = l.exact && l.kernels ? l.kernels : [];
    const nk = ks.length;
    const kt = new Float64Array(nk);
    const kd = new Float64Array(nk);
    const kname = new Int32Array(nk);
    const kid = new Int32Array(nk);
    const kcorr = new Int32Array(nk);
    let maxDur = 0;
    for (let i = 0; i < nk; i++) {
      const k = ks[i];
      kid[i] = k[0];
      kt[i] = Number(BigInt(k[1]) - base);
      kd[i] = Number(k[2]);
      kname[i] = k[3];
      kcorr[i] = k[4];
      if (kd[i] > maxDur) maxDur = kd[i];
    }
    return {
      key: kLane(l.dev, l.stream),
      dev: l.dev,
      stream: l.stream,
      exact: !!l.exact && !!l.kernels,
      col,
      n,
      busy,
      top,
      kt,
      kd,
      kname,
      kid,
      kcorr,
      maxDur,
    };
  });
  return {
    res,
    idx,
    t0,
    t1: t0 + tileSpan(res),
    raw: a.level === 'raw',
    lanes,
    byKey: new Map(lanes.map((l) => [l.key, l])),
  };
}

/* Tiles by (res, idx), the most recently used kept (max entries). */
export class TileCache<T> {
  private m = new Map<string, T>();
  constructor(private max = 256) {}
  static key(res: number, idx: number): string {
    return res + ':' + idx;
  }
  get(res: number, idx: number): T | undefined {
    const k = TileCache.key(res, idx);
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  has(res: number, idx: number): boolean {
    return this.m.has(TileCache.key(res, idx));
  }
  set(res: number, idx: number, v: T): void {
    const k = TileCache.key(res, idx);
    this.m.delete(k);
    this.m.set(k, v);
    while (this.m.size > this.max) this.m.delete(this.m.keys().next().value as string);
  }
  /* forget tiles that overlap [t0, +inf): a live session's growing end */
  dropFrom(t0: number, span: (res: number) => number): void {
    for (const k of [...this.m.keys()]) {
      const [r, i] = k.split(':').map(Number);
      if ((i + 1) * span(r) > t0) this.m.delete(k);
    }
  }
  clear(): void {
    this.m.clear();
  }
  get size(): number {
    return this.m.size;
  }
  values(): IterableIterator<T> {
    return this.m.values();
  }
}

/* The tile to draw [t0, t1) from at resolution res: the tile itself when
   loaded, else the nearest loaded coarser one (fewer, wider columns: still
   complete), else a finer one (complete too, just more detail than
   needed); null when none is loaded (the view draws that span as
   loading, not as empty). */
export function bestTile<T extends { t0: number; t1: number }>(
  get: (res: number, idx: number) => T | undefined,
  res: number,
  t: number,
  maxRes: number,
): T | null {
  for (let r = res; r <= maxRes; r *= 2) {
    const x = get(r, Math.floor(t / tileSpan(r)));
    if (x) return x;
  }
  for (let r = res / 2, k = 0; r >= 1 && k < 3; r /= 2, k++) {
    const x = get(r, Math.floor(t / tileSpan(r)));
    if (x && x.t0 <= t && x.t1 > t) return x;
  }
  return null;
}
