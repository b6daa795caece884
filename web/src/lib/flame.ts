// flame.ts - a flame graph (root at the top, callees below) built from
// memory-profile stacks: {frames: root first .. leaf last, bytes, count}.
//
// total(node) = bytes of every stack passing through it; self(node) = bytes
// of stacks ending at it.  total = self + Σ total(children).
import type { Dec, Int } from './api';

/* As the API sends it: bytes a decimal string (docs/api.md "Numbers"). */
export interface Stack {
  frames: string[];
  bytes: Dec | number;
  count: Int;
}

export interface FNode {
  name: string;
  total: number;
  self: number;
  count: number;
  selfCount: number;
  depth: number;
  children: FNode[];
  parent: FNode | null;
}

export function buildFlame(stacks: Stack[], rootName = 'all'): FNode {
  const root: FNode = {
    name: rootName,
    total: 0,
    self: 0,
    count: 0,
    selfCount: 0,
    depth: 0,
    children: [],
    parent: null,
  };
  const index = new Map<FNode, Map<string, FNode>>();
  for (const s of stacks) {
    const bytes = Number(s.bytes);
    const count = Number(s.count);
    let n = root;
    n.total += bytes;
    n.count += count;
    for (const f of s.frames) {
      let m = index.get(n);
      if (!m) index.set(n, (m = new Map()));
      let c = m.get(f);
      if (!c) {
        c = { name: f, total: 0, self: 0, count: 0, selfCount: 0, depth: n.depth + 1, children: [], parent: n };
        m.set(f, c);
        n.children.push(c);
      }
      c.total += bytes;
      c.count += count;
      n = c;
    }
    n.self += bytes;
    n.selfCount += count;
  }
  const sortRec = (n: FNode) => {
    n.children.sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : 1));
    n.children.forEach(sortRec);
  };
  sortRec(root);
  return root;
}

export function pathOf(n: FNode): string[] {
  const p: string[] = [];
  for (let c: FNode | null = n; c && c.parent; c = c.parent) p.unshift(c.name);
  return p;
}

export function findPath(root: FNode, path: string[]): FNode | null {
  let n: FNode | undefined = root;
  for (const f of path) {
    n = n.children.find((c) => c.name === f);
    if (!n) return null;
  }
  return n;
}

export interface FRect {
  node: FNode;
  x: number; // 0..1 of the focused node's total
  w: number;
  depth: number; // row, 0 = focus node
}

/* Layout of the subtree under `focus` (zoomed into that frame), with its
   ancestors drawn full width above it.  Nodes narrower than minFrac are
   culled (their parent's width still counts them). */
export function layoutFlame(root: FNode, focus: FNode, minFrac = 0): FRect[] {
  const out: FRect[] = [];
  const anc: FNode[] = [];
  for (let c: FNode | null = focus.parent; c; c = c.parent) anc.unshift(c);
  anc.forEach((a, i) => out.push({ node: a, x: 0, w: 1, depth: i }));
  const base = anc.length;
  const tot = focus.total || 1;
  const walk = (n: FNode, x: number, d: number) => {
    const w = n.total / tot;
    if (w < minFrac || w <= 0) return;
    out.push({ node: n, x, w, depth: d });
    let cx = x;
    for (const c of n.children) {
      walk(c, cx, d + 1);
      cx += c.total / tot;
    }
  };
  walk(focus, 0, base);
  void root;
  return out;
}

/* Names matching a search (case-insensitive substring), and the bytes they
   cover without double counting nested matches. */
export function searchFlame(root: FNode, q: string): { matches: Set<FNode>; bytes: number } {
  const matches = new Set<FNode>();
  let bytes = 0;
  const s = q.toLowerCase();
  if (!s) return { matches, bytes };
  const walk = (n: FNode, covered: boolean) => {
    const hit = n.parent !== null && n.name.toLowerCase().includes(s);
    if (hit) matches.add(n);
    if (hit && !covered) bytes += n.total;
    n.children.forEach((c) => walk(c, covered || hit));
  };
  walk(root, false);
  return { matches, bytes };
}

/* Flat "top" table: per frame name, self and total (total counted once per
   stack even when the name recurs in it). */
export function topTable(stacks: Stack[]): { name: string; self: number; total: number }[] {
  const m = new Map<string, { name: string; self: number; total: number }>();
  for (const s of stacks) {
    const seen = new Set<string>();
    s.frames.forEach((f, i) => {
      let e = m.get(f);
      if (!e) m.set(f, (e = { name: f, self: 0, total: 0 }));
      if (!seen.has(f)) {
        e.total += Number(s.bytes);
        seen.add(f);
      }
      if (i === s.frames.length - 1) e.self += Number(s.bytes);
    });
  }
  return [...m.values()].sort((a, b) => b.self - a.self || b.total - a.total);
}
