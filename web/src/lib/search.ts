// search.ts - where a kernel-name search hits, for the timeline's hit marks
// (docs/ui.md "Search").  The server filters kernels by a substring of
// either name form (GET .../kernels?name=); a range is cut into strata and
// each stratum asked for its first `limit` hits: a stratum with fewer is
// known exactly (count and positions), one with more is "dense" (count at
// least `limit`, marked over its whole width).  The total comes from the
// per-name aggregates (exact).

export interface Stratum {
  a: number; // offsets, ns
  b: number;
  n: number; // hits (a lower bound when more)
  more: boolean;
  at: number[]; // hit starts (offsets), the first n
}

/* S equal strata of [a, b), integer bounds, none empty. */
export function strata(a: number, b: number, S: number): [number, number][] {
  const out: [number, number][] = [];
  const n = Math.max(1, Math.min(S, Math.floor(b - a)));
  for (let i = 0; i < n; i++) {
    const x = Math.floor(a + ((b - a) * i) / n);
    const y = i === n - 1 ? Math.ceil(b) : Math.floor(a + ((b - a) * (i + 1)) / n);
    if (y > x) out.push([x, y]);
  }
  return out;
}

/* Hits in [a, b) from the strata: the count and whether it is exact. */
export function hitsIn(st: Stratum[], a: number, b: number): { n: number; exact: boolean } {
  let n = 0;
  let exact = true;
  for (const s of st) {
    if (s.b <= a || s.a >= b) continue;
    if (s.a >= a && s.b <= b) {
      n += s.n;
      if (s.more) exact = false;
      continue;
    }
    // partly inside: count the known positions inside
    for (const t of s.at) if (t >= a && t < b) n++;
    if (s.more) exact = false;
  }
  return { n, exact };
}

/* Density per pixel column of [v0, v1) over w columns: 0 none, else the
   number of hits seen in it; the columns of a dense stratum that hold no
   hit seen are `dense` (a hit is there or near, not counted). */
export function density(st: Stratum[], v0: number, v1: number, w: number, dense = -1): Float32Array {
  const out = new Float32Array(Math.max(1, Math.floor(w)));
  const k = out.length / (v1 - v0);
  for (const s of st) {
    if (s.b <= v0 || s.a >= v1) continue;
    if (s.more) {
      const x0 = Math.max(0, Math.floor((s.a - v0) * k));
      const x1 = Math.min(out.length, Math.ceil((s.b - v0) * k));
      for (let x = x0; x < x1; x++) if (out[x] === 0) out[x] = dense;
      for (const t of s.at) {
        if (t < v0 || t >= v1) continue;
        const x = Math.min(out.length - 1, Math.floor((t - v0) * k));
        out[x] = out[x] === dense ? 1 : out[x] + 1;
      }
      continue;
    }
    for (const t of s.at) {
      if (t < v0 || t >= v1) continue;
      const x = Math.min(out.length - 1, Math.floor((t - v0) * k));
      out[x]++;
    }
  }
  return out;
}
