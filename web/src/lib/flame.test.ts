import { describe, expect, it } from 'vitest';
import { buildFlame, findPath, layoutFlame, searchFlame, topTable, pathOf } from './flame';

const stacks = [
  { frames: ['main', 'train', 'torch.empty', 'cudaMalloc'], bytes: 100, count: 2 },
  { frames: ['main', 'train', 'cudaMalloc'], bytes: 50, count: 1 },
  { frames: ['main', 'eval'], bytes: 30, count: 3 },
  { frames: ['main', 'train', 'torch.empty'], bytes: 20, count: 1 },
];

describe('buildFlame', () => {
  it('sums total through each frame and self at the leaf', () => {
    const r = buildFlame(stacks);
    expect(r.total).toBe(200);
    expect(r.count).toBe(7);
    const main = findPath(r, ['main'])!;
    expect(main.total).toBe(200);
    expect(main.self).toBe(0);
    const train = findPath(r, ['main', 'train'])!;
    expect(train.total).toBe(170);
    expect(train.self).toBe(0);
    const empty = findPath(r, ['main', 'train', 'torch.empty'])!;
    expect(empty.total).toBe(120);
    expect(empty.self).toBe(20);
    expect(findPath(r, ['main', 'train', 'cudaMalloc'])!.self).toBe(50);
    expect(findPath(r, ['main', 'eval'])!.count).toBe(3);
  });
  it('keeps total = self + sum(children) everywhere, children biggest first', () => {
    const r = buildFlame(stacks);
    const walk = (n: ReturnType<typeof buildFlame>) => {
      expect(n.total).toBe(n.self + n.children.reduce((a, c) => a + c.total, 0));
      for (let i = 1; i < n.children.length; i++)
        expect(n.children[i - 1].total).toBeGreaterThanOrEqual(n.children[i].total);
      n.children.forEach(walk);
    };
    walk(r);
    expect(r.children[0].children.map((c) => c.name)).toEqual(['train', 'eval']);
  });
  it('same frame names under different parents stay separate nodes', () => {
    const r = buildFlame(stacks);
    const a = findPath(r, ['main', 'train', 'cudaMalloc'])!;
    const b = findPath(r, ['main', 'train', 'torch.empty', 'cudaMalloc'])!;
    expect(a).not.toBe(b);
    expect(a.total + b.total).toBe(150);
    expect(pathOf(b)).toEqual(['main', 'train', 'torch.empty', 'cudaMalloc']);
  });
});

describe('layoutFlame', () => {
  it('lays children side by side within the parent, zooms to a focus', () => {
    const r = buildFlame(stacks);
    const full = layoutFlame(r, r);
    const train = full.find((x) => x.node.name === 'train')!;
    const ev = full.find((x) => x.node.name === 'eval')!;
    expect(train.x).toBe(0);
    expect(train.w).toBeCloseTo(0.85);
    expect(ev.x).toBeCloseTo(0.85);
    expect(ev.w).toBeCloseTo(0.15);
    const focus = findPath(r, ['main', 'train'])!;
    const z = layoutFlame(r, focus);
    // ancestors full width on top, the focus full width at its depth
    expect(z.slice(0, 2).map((x) => [x.node.name, x.w])).toEqual([
      [r.name, 1],
      ['main', 1],
    ]);
    const f = z.find((x) => x.node === focus)!;
    expect([f.x, f.w, f.depth]).toEqual([0, 1, 2]);
    expect(z.find((x) => x.node.name === 'eval')).toBeUndefined();
  });
  it('culls nodes narrower than minFrac', () => {
    const r = buildFlame([...stacks, { frames: ['main', 'tiny'], bytes: 1, count: 1 }]);
    expect(layoutFlame(r, r, 0.01).find((x) => x.node.name === 'tiny')).toBeUndefined();
    expect(layoutFlame(r, r, 0).find((x) => x.node.name === 'tiny')).toBeDefined();
  });
});

describe('search and top table', () => {
  it('counts matched bytes once when matches nest', () => {
    const r = buildFlame(stacks);
    const s = searchFlame(r, 'CUDAMALLOC');
    expect(s.matches.size).toBe(2);
    expect(s.bytes).toBe(150);
    const t = searchFlame(r, 'train');
    expect(t.bytes).toBe(170);
  });
  it('top table: self at leaves, total once per stack', () => {
    const t = topTable([...stacks, { frames: ['main', 'rec', 'rec'], bytes: 5, count: 1 }]);
    const get = (n: string) => t.find((x) => x.name === n)!;
    expect(get('cudaMalloc').self).toBe(150);
    expect(get('main').total).toBe(205);
    expect(get('rec').total).toBe(5);
    expect(get('rec').self).toBe(5);
    expect(t[0].name).toBe('cudaMalloc');
  });
});
