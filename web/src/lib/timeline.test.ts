import { describe, expect, it } from 'vitest';
import {
  clampView,
  countInView,
  drawList,
  layoutLanes,
  pan,
  pick,
  scopeItems,
  summaryItems,
  ticks,
  xOf,
  zoom,
  kLane,
} from './timeline';

describe('layoutLanes', () => {
  it('orders scope lane, then per device kernel streams then copy kinds, no overlap', () => {
    const l = layoutLanes(
      [
        { dev: 1, stream: 3 },
        { dev: 0, stream: 9 },
        { dev: 0, stream: 7 },
        { dev: 0, stream: 7 },
      ],
      [
        { dev: 0, kind: 'memcpy htod' },
        { dev: 1, kind: 'memset' },
      ],
      20,
    );
    expect(l.map((x) => x.key)).toEqual(['scope', 'k0:7', 'k0:9', 'c0:memcpy htod', 'k1:3', 'c1:memset']);
    expect(l[0].y).toBe(20);
    for (let i = 1; i < l.length; i++) expect(l[i].y).toBeGreaterThanOrEqual(l[i - 1].y + l[i - 1].h);
  });
});

describe('summary buckets to rects', () => {
  // busy ns as the API sends it: a decimal string (docs/api.md "Numbers")
  const s = {
    from: 0,
    to: 1000,
    width: 10,
    bucket_ns: 100,
    lanes: [
      {
        dev: 0,
        stream: 7,
        buckets: [
          [0, 5, '100', 1],
          [3, 2, '50', 2],
          [9, 1, '10', 1],
        ] as [number, number, string, number][],
      },
    ],
  };
  it('maps pixel p to [from + p*px, +px)', () => {
    const it = summaryItems(s);
    expect(it.map((x) => [x.lane, x.t, x.dur, x.count, x.busy])).toEqual([
      ['k0:7', 0, 100, 5, 100],
      ['k0:7', 300, 100, 2, 50],
      ['k0:7', 900, 100, 1, 10],
    ]);
    expect(countInView(it, { t0: 250, t1: 950 })).toBe(3);
    expect(countInView(it, { t0: 0, t1: 1000 })).toBe(8);
  });
  it('draws them at the right x for the current view (zoom and pan move them)', () => {
    const it = summaryItems(s);
    const r = drawList(it, { t0: 0, t1: 1000 }, 100);
    expect(r.map((x) => [x.x, x.w])).toEqual([
      [0, 10],
      [30, 10],
      [90, 10],
    ]);
    expect(r[0].shade).toBe(1);
    expect(r[1].shade).toBeCloseTo(0.5);
    const z = drawList(it, { t0: 250, t1: 450 }, 100);
    expect(z.map((x) => [x.x, x.w])).toEqual([[25, 50]]);
  });
  it('merges sub-pixel items to one rect per lane per pixel column', () => {
    const items = Array.from({ length: 1000 }, (_, i) => ({
      lane: kLane(0, 1),
      t: i * 10,
      dur: 5,
      count: 1,
      busy: 5,
      name: 'k',
      id: i,
    }));
    const r = drawList(items, { t0: 0, t1: 10000 }, 100);
    expect(r.length).toBe(100);
    const cols = new Set(r.map((x) => Math.floor(x.x)));
    expect(cols.size).toBe(100);
    expect(r[0].shade).toBeCloseTo(0.5);
    const wide = drawList(items, { t0: 0, t1: 100 }, 100);
    expect(wide.length).toBe(10);
    expect(wide.every((x) => Math.abs(x.w - 5) < 1e-9)).toBe(true);
    expect(pick(wide, 'k0:1', 32)!.item.id).toBe(3);
    expect(pick(wide, 'k0:9', 32)).toBeNull();
  });
  it('clips to the canvas', () => {
    const r = drawList([{ lane: 'a', t: -50, dur: 200, count: 1, busy: 200, name: 'x' }], { t0: 0, t1: 100 }, 100);
    expect([r[0].x, r[0].w]).toEqual([0, 100]);
    expect(xOf(50, { t0: 0, t1: 100 }, 200)).toBe(100);
  });
});

describe('viewport', () => {
  it('zooms around the anchor and clamps to the session', () => {
    const v = zoom({ t0: 0, t1: 1e6 }, 0.5, 0.5, 0, 1e6);
    expect(v).toEqual({ t0: 250000, t1: 750000 });
    expect(zoom(v, 4, 0.5, 0, 1e6)).toEqual({ t0: 0, t1: 1e6 });
    expect(zoom({ t0: 0, t1: 2000 }, 0.01, 0, 0, 1e6).t1).toBe(1000);
    expect(pan({ t0: 0, t1: 100 }, 0.5, 0, 1000)).toEqual({ t0: 50, t1: 150 });
    expect(pan({ t0: 900, t1: 1000 }, 0.5, 0, 1000)).toEqual({ t0: 900, t1: 1000 });
    expect(clampView({ t0: -10, t1: 90 }, 0, 1000)).toEqual({ t0: 0, t1: 100 });
  });
  it('ticks are 1-2-5 steps inside the view', () => {
    const t = ticks({ t0: 3, t1: 1003 }, 1000);
    // ~1000/110 ticks wanted: a 110 ns step rounds up to 200
    expect(t[0]).toBe(200);
    expect(t[1] - t[0]).toBe(200);
    expect(t[t.length - 1]).toBeLessThanOrEqual(1003);
  });
});

describe('scopeItems', () => {
  it('spans each scope instance over its kernels', () => {
    const s = scopeItems([
      { scope: 5, t: 10, dur: 5 },
      { scope: 5, t: 30, dur: 10 },
      { scope: 0, t: 0, dur: 1 },
      { scope: 6, t: 50, dur: 1 },
    ]);
    expect(s.map((x) => [x.id, x.t, x.dur, x.count])).toEqual([
      [5, 10, 30, 2],
      [6, 50, 1, 1],
    ]);
  });
});
