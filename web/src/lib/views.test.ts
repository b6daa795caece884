import { describe, expect, it } from 'vitest';
import { scopeTree, ScopeNodeNum, visibleRows } from '../views/Scopes';
import type { ScopeNode } from './types';
import { fmtBytes, fmtNs } from './format';

const n = (path: string, total: number, children: ScopeNodeNum[] = []): ScopeNodeNum => ({
  name: path.split('/').pop()!,
  path,
  path_id: 0,
  depth: path.split('/').length,
  instances: 1,
  total_ns: total,
  self_ns: 0,
  kernels: 0,
  gpu_ns: 0,
  kernels_total: 0,
  gpu_ns_total: 0,
  children,
});

describe('scope tree rows', () => {
  const roots = [
    n('setup', 5),
    n('epoch', 100, [n('epoch/step', 90, [n('epoch/step/forward', 30), n('epoch/step/backward', 50)])]),
  ];
  it('shows roots by total, children only when expanded', () => {
    expect(visibleRows(roots, new Set(), '').map((r) => r.path)).toEqual(['epoch', 'setup']);
    expect(visibleRows(roots, new Set(['epoch', 'epoch/step']), '').map((r) => r.path)).toEqual([
      'epoch',
      'epoch/step',
      'epoch/step/backward',
      'epoch/step/forward',
      'setup',
    ]);
  });
  it('a filter keeps matches and their ancestors, expanded', () => {
    expect(visibleRows(roots, new Set(), 'FORW').map((r) => r.path)).toEqual([
      'epoch',
      'epoch/step',
      'epoch/step/forward',
    ]);
    expect(visibleRows(roots, new Set(), 'nothing')).toEqual([]);
  });
});

describe('scope tree from the API', () => {
  it('reads the ns sums, decimal strings (docs/api.md "Numbers"), as numbers at every depth', () => {
    const a = (path: string, total: string, children: ScopeNode[] = []): ScopeNode => ({
      name: path,
      path,
      path_id: 1,
      depth: 1,
      instances: 1,
      total_ns: total,
      self_ns: '1',
      kernels: 0,
      gpu_ns: '2',
      kernels_total: 0,
      gpu_ns_total: '3',
      children,
    });
    const t = scopeTree([a('x', '100', [a('x/y', '90')]), a('z', '5')]);
    expect(t.reduce((s, n) => s + n.total_ns, 0)).toBe(105);
    expect(t[0].children[0]).toMatchObject({ total_ns: 90, self_ns: 1, gpu_ns: 2, gpu_ns_total: 3 });
    expect(visibleRows(t, new Set(), '').map((r) => r.path)).toEqual(['x', 'z']);
  });
});

describe('format', () => {
  it('units', () => {
    expect(fmtNs(999)).toBe('999 ns');
    expect(fmtNs(12804)).toBe('12.8 µs');
    expect(fmtNs(1114073480)).toBe('1.114 s');
    expect(fmtBytes(1048576)).toBe('1.00 MiB');
    expect(fmtBytes(213000)).toBe('208.0 KiB');
  });
});
