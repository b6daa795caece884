// jobtl.ts - the Job page's timeline (docs/ui.md "Jobs"): one lane per
// rank, each made of its session's GET …/timeline answer for one window
// (every stream of the rank folded into its lane), all ranks on one axis:
// the wall clock each rank's host recorded its events on.
import type { TimelineTileAnswer } from './tiles';

export interface RankLane {
  occ: Float64Array; // per column: kernel time over the column's time (several streams add up), 0..
  hit: Uint8Array; // 1 where a kernel of the rank occupies the column (the API lists it)
  busyCols: number; // columns hit
  kernels: number; // kernels started in the window
  top: Int32Array; // per column: the longest kernel's name id (-1: none)
}

/* One rank's lane from its session's answer for the shared window (the
   same from, to and width for every rank, so the columns line up). */
export function rankLane(a: TimelineTileAnswer, width: number): RankLane {
  const occ = new Float64Array(width);
  const hit = new Uint8Array(width);
  const top = new Int32Array(width).fill(-1);
  const best = new Float64Array(width);
  const bucket = Number(a.bucket_ns) || 1;
  let kernels = 0;
  for (const l of a.lanes)
    for (const [px, n, busy, name] of l.buckets) {
      if (px < 0 || px >= width) continue;
      const b = Number(busy);
      occ[px] += b / bucket;
      hit[px] = 1;
      kernels += n;
      if (b >= best[px]) {
        best[px] = b;
        top[px] = name;
      }
    }
  let busyCols = 0;
  for (let i = 0; i < width; i++) busyCols += hit[i];
  return { occ, hit, busyCols, kernels, top };
}

/* How the lanes are aligned, in words: on the wall clock of each rank's
   host (the `ts` of its lines); hosts' clock offsets are not measured. */
export function clockNote(hosts: string[]): string {
  const h = [...new Set(hosts)].sort();
  return (
    'Aligned on the wall clock: each rank at the times its own host recorded (' +
    h.length +
    (h.length === 1 ? ' host: ' : ' hosts: ') +
    h.join(', ') +
    ').' +
    (h.length > 1
      ? ' The offsets between the hosts’ clocks are not measured: a host whose clock is off (no NTP) shifts its ranks by that much.'
      : ' One clock: the lanes line up exactly.')
  );
}

/* A window [from, to) (ns, wall clock) zoomed to the columns [c0, c1) of
   width columns: at least `width` ns wide. */
export function zoomTo(from: bigint, to: bigint, width: number, c0: number, c1: number): [bigint, bigint] {
  const span = to - from;
  const a = Math.max(0, Math.min(c0, c1));
  const b = Math.min(width, Math.max(c0, c1));
  let f = from + (span * BigInt(Math.floor(a))) / BigInt(width);
  let t = from + (span * BigInt(Math.ceil(b))) / BigInt(width);
  if (t - f < BigInt(width)) {
    const mid = (f + t) / 2n;
    f = mid - BigInt(width) / 2n;
    t = f + BigInt(width);
  }
  return [f, t];
}
