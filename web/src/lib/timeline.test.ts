import { describe, expect, it } from 'vitest';
import {
  clampView,
  countInView,
  fitView,
  layoutLanes,
  NameColors,
  paintKernelRow,
  pan,
  pickKernel,
  segments,
  xOf,
  zoom,
  MIN_SPAN,
  DIM,
} from './timeline';
import { LANE_BG, Raster, BG } from './raster';
import { bestTile, parseTile, resFor, Tile, TileCache, tilesFor, TILE_COLS, TimelineTileAnswer } from './tiles';

describe('layoutLanes', () => {
  it('orders hits, scope depths, API threads, then per device kernel streams, copy kinds and counters', () => {
    const l = layoutLanes(
      {
        hits: true,
        scopeDepths: 2,
        threads: [12, 7],
        kernelLanes: [
          { dev: 1, stream: 3 },
          { dev: 0, stream: 9 },
          { dev: 0, stream: 7 },
          { dev: 0, stream: 7 },
        ],
        copyLanes: [
          { dev: 0, kind: 'memcpy htod' },
          { dev: 1, kind: 'memset' },
        ],
        counters: [{ dev: 0, track: 'util', label: 'GPU0 util' }],
      },
      20,
    );
    expect(l.map((x) => x.key)).toEqual([
      'hits',
      's0',
      's1',
      'a7',
      'a12',
      'k0:7',
      'k0:9',
      'c0:memcpy htod',
      't0:util',
      'k1:3',
      'c1:memset',
    ]);
    expect(l[0].y).toBe(20);
    for (let i = 1; i < l.length; i++) expect(l[i].y).toBeGreaterThanOrEqual(l[i - 1].y + l[i - 1].h);
  });
});

describe('viewport', () => {
  it('zooms around the anchor, down to 100 ns, and clamps to the session', () => {
    const v = zoom({ t0: 0, t1: 1e6 }, 0.5, 0.5, 0, 1e6);
    expect(v).toEqual({ t0: 250000, t1: 750000 });
    expect(zoom(v, 4, 0.5, 0, 1e6)).toEqual({ t0: 0, t1: 1e6 });
    expect(zoom({ t0: 0, t1: 2000 }, 0.001, 0, 0, 1e6).t1).toBe(MIN_SPAN);
    // the time under the cursor stays put
    const z = zoom({ t0: 1000, t1: 3000 }, 0.25, 0.3, 0, 1e6);
    expect(z.t0 + 0.3 * (z.t1 - z.t0)).toBeCloseTo(1600);
    expect(pan({ t0: 0, t1: 100 }, 0.5, 0, 1000)).toEqual({ t0: 50, t1: 150 });
    expect(pan({ t0: 900, t1: 1000 }, 0.5, 0, 1000)).toEqual({ t0: 900, t1: 1000 });
    expect(clampView({ t0: -10, t1: 90 }, 0, 1000)).toEqual({ t0: 0, t1: 100 });
    expect(fitView(100, 200, 0, 1e6)).toEqual({ t0: 90, t1: 210 });
  });
});

/* a timeline answer for one tile: lane 0:7 exact with two kernels, lane 0:8
   columns only */
function answer(res: number, idx: number, base: bigint): TimelineTileAnswer {
  const t0 = base + BigInt(idx * res * TILE_COLS);
  return {
    from: t0.toString(),
    to: (t0 + BigInt(res * TILE_COLS)).toString(),
    width: TILE_COLS,
    bucket_ns: String(res),
    level: 'raw',
    lanes: [
      {
        dev: 0,
        stream: 7,
        exact: true,
        buckets: [
          [10, 1, String(res), 1],
          [100, 1, String(res * 3), 2],
        ],
        kernels: [
          [5, (t0 + BigInt(10 * res)).toString(), String(res), 1, 50],
          [6, (t0 + BigInt(100 * res)).toString(), String(res * 30), 2, 51],
        ],
      },
      { dev: 0, stream: 8, exact: false, buckets: [[500, 9, String(res / 2), 2]] },
    ],
    names: { '1': 'void gemm<128, 256>(float*)', '2': 'flash_fwd' },
  };
}

describe('tiles', () => {
  const base = 1_795_995_293_491_901_786n;
  it('resFor is the power of two at or below ns/px; tilesFor covers the view', () => {
    expect(resFor(1000)).toBe(512);
    expect(resFor(0.2)).toBe(1);
    expect(tilesFor(0, 1024 * 512 * 2 + 1, 512)).toEqual([0, 1, 2]);
    expect(tilesFor(1024 * 512 * 3, 1024 * 512 * 4, 512, 1, 1024 * 512 * 4)).toEqual([2, 3]);
  });
  it('parses a tile: offsets from base, exact kernels, columns', () => {
    const names = new Map<number, string>();
    const t = parseTile(answer(256, 2, base), 256, 2, base, names, new Map());
    expect(t.t0).toBe(2 * 256 * 1024);
    const l = t.byKey.get('k0:7')!;
    expect(l.exact).toBe(true);
    expect([...l.kt]).toEqual([t.t0 + 2560, t.t0 + 25600]);
    expect(l.maxDur).toBe(256 * 30);
    expect(t.byKey.get('k0:8')!.exact).toBe(false);
    expect(names.get(1)).toBe('void gemm<128, 256>(float*)');
  });
  it('bestTile: the tile, else a coarser one, else a finer one covering t', () => {
    const c = new TileCache<{ t0: number; t1: number; r: number }>();
    c.set(1024, 0, { t0: 0, t1: 1024 * 1024, r: 1024 });
    c.set(256, 3, { t0: 3 * 256 * 1024, t1: 4 * 256 * 1024, r: 256 });
    const get = (r: number, i: number) => c.get(r, i);
    expect(bestTile(get, 512, 10, 1024)!.r).toBe(1024);
    expect(bestTile(get, 256, 3 * 256 * 1024 + 5, 1024)!.r).toBe(256);
    const c2 = new TileCache<{ t0: number; t1: number; r: number }>();
    c2.set(128, 0, { t0: 0, t1: 128 * 1024, r: 128 });
    expect(bestTile((r, i) => c2.get(r, i), 256, 100, 1024)!.r).toBe(128);
    expect(bestTile((r, i) => c2.get(r, i), 256, 128 * 1024 + 1, 1024)).toBeNull();
  });
  it('segments cut the view by tile, with unloaded stretches marked', () => {
    const c = new TileCache<{ t0: number; t1: number }>();
    c.set(1, 0, { t0: 0, t1: 1024 });
    c.set(1, 2, { t0: 2048, t1: 3072 });
    const s = segments({ t0: 500, t1: 2500 }, 1, (r, i) => c.get(r, i), 1);
    expect(s.map((x) => [x.a, x.b, !!x.tile])).toEqual([
      [500, 1024, true],
      [1024, 2048, false],
      [2048, 2500, true],
    ]);
  });
});

describe('painting a kernel lane', () => {
  const base = 0n;
  const res = 256;
  const names = new Map<number, string>();
  const tile: Tile = parseTile(answer(res, 0, base), res, 0, base, names, new Map());
  const colors = new NameColors((id) => names.get(id) ?? '');
  const paint = (v: { t0: number; t1: number }, w: number, match: ((n: number) => boolean) | null = null) => {
    const r = new Raster(w + 10, 40, null);
    r.clear(BG);
    const segs = segments(v, res, (rr, i) => (rr === res && i === 0 ? tile : undefined), res);
    const labels = paintKernelRow({ r, v, x0: 10, w, dpr: 1, colors, match }, segs, 'k0:7', 0, 22);
    const l2 = paintKernelRow({ r, v, x0: 10, w, dpr: 1, colors, match }, segs, 'k0:8', 20, 18);
    return { r, labels, l2, segs };
  };
  it('draws each exact kernel where it ran and nothing elsewhere', () => {
    const v = { t0: 0, t1: res * 1024 };
    const { r } = paint(v, 1024);
    const row = 10;
    // kernel 5 at column 10 (1 px), kernel 6 from 100 to 130
    expect(r.at(10 + 10, row)).not.toBe(LANE_BG);
    expect(r.at(10 + 11, row)).toBe(LANE_BG);
    expect(r.at(10 + 100, row)).not.toBe(LANE_BG);
    expect(r.at(10 + 128, row)).not.toBe(LANE_BG);
    // its last pixel is a darker edge (neighbours stay apart), still drawn
    expect(r.at(10 + 129, row)).not.toBe(LANE_BG);
    expect(r.at(10 + 129, row)).not.toBe(r.at(10 + 128, row));
    expect(r.at(10 + 130, row)).toBe(LANE_BG);
    expect(r.at(10 + 131, row)).toBe(LANE_BG);
    expect(r.at(10 + 50, row)).toBe(LANE_BG);
    // the label column is untouched
    expect(r.at(5, row)).toBe(BG);
    // summary lane: column 500 shaded, never background
    expect(r.at(10 + 500, 30)).not.toBe(LANE_BG);
    expect(r.at(10 + 501, 30)).toBe(LANE_BG);
  });
  it('a kernel far narrower than a pixel still paints its pixel', () => {
    const v = { t0: 0, t1: res * 1024 * 8 };
    const { r } = paint(v, 128);
    expect(r.at(10 + Math.floor(xOf(10 * res, v, 128)), 10)).not.toBe(LANE_BG);
  });
  it('labels kernels >= 40 px, and search dims the others (exact kernels only)', () => {
    const v = { t0: 90 * res, t1: 140 * res };
    const { labels, r } = paint(v, 500);
    expect(labels.map((l) => l.kid)).toEqual([6]);
    expect(labels[0].x).toBeCloseTo(10 + 100);
    const d = paint(v, 500, (n) => n === 1);
    expect(d.r.at(10 + 200, 10)).toBe(DIM);
    expect(r.at(10 + 200, 10)).not.toBe(DIM);
  });
  it('hatches a stretch with no tile as loading, not as idle', () => {
    const v = { t0: 0, t1: res * 1024 * 2 };
    const { r } = paint(v, 200);
    let marked = 0;
    for (let x = 110; x < 210; x++) if (r.at(x, 10) !== LANE_BG) marked++;
    expect(marked).toBeGreaterThan(30);
  });
  it('picks the kernel or the column under the pointer, and counts what is in view', () => {
    const v = { t0: 0, t1: res * 1024 };
    const { segs } = paint(v, 1024);
    expect(pickKernel(segs, 'k0:7', 105 * res, res)).toMatchObject({ kind: 'kernel', kid: 6, corr: 51 });
    expect(pickKernel(segs, 'k0:7', 60 * res, res)).toBeNull();
    expect(pickKernel(segs, 'k0:8', 500 * res + 3, 1)).toMatchObject({ kind: 'column', n: 9 });
    expect(countInView(segs, v)).toEqual({ n: 11, exact: false });
  });
});
