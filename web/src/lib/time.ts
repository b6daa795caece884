// time.ts - time as the timeline, its axis and the tables write it: offsets
// from the session's first event, with as many decimals as the zoom needs,
// and absolute wall time (UTC) to the nanosecond.
//
// Offsets are integer ns held in Numbers (exact below 2^53 ns = 104 days);
// absolute epoch-ns times stay bigint.  Labels are built from integer
// arithmetic (seconds and a nine-digit fraction), never from a float's
// decimal expansion, so two ticks one step apart never read the same.

/* How offsets are written, chosen once per axis (or table) from the
   largest value so that every label of it has the same shape. */
export type TimeStyle = 's' | 'ms' | 'hms';

export function styleFor(maxNs: number): TimeStyle {
  return maxNs < 60e9 ? 's' : maxNs < 3600e9 ? 'ms' : 'hms';
}

/* Decimals of a second that tell apart multiples of step ns (step >= 1 ns,
   a 1-2-5 x 10^e value): 9 - e, at least 0. */
export function decimalsFor(stepNs: number): number {
  const e = Math.floor(Math.log10(Math.max(1, stepNs)) + 1e-9);
  return Math.max(0, Math.min(9, 9 - e));
}

/* The fraction digits in groups of three (thin spaces), as Perfetto and
   Nsight write them: 17.200 000 1 s. */
function groups(d: string): string {
  return d.replace(/(\d{3})(?=\d)/g, '$1\u2009');
}

/* An offset (ns, >= 0) with `decimals` decimals of a second:
   's'   17.200 000 1 s
   'ms'  12:05.250 s    (minutes:seconds)
   'hms' 23:59:59.5 s   (hours:minutes:seconds) */
export function fmtRel(ns: number, decimals: number, style: TimeStyle = styleFor(ns)): string {
  const neg = ns < 0;
  let t = Math.round(Math.abs(ns));
  const unit = Math.pow(10, 9 - decimals);
  t = Math.round(t / unit) * unit; // round to the shown precision
  const sec = Math.floor(t / 1e9);
  const frac = t - sec * 1e9;
  const fs = decimals > 0 ? '.' + groups(String(frac).padStart(9, '0').slice(0, decimals)) : '';
  let head: string;
  if (style === 's') head = String(sec);
  else if (style === 'ms') head = Math.floor(sec / 60) + ':' + String(sec % 60).padStart(2, '0');
  else
    head =
      Math.floor(sec / 3600) +
      ':' +
      String(Math.floor(sec / 60) % 60).padStart(2, '0') +
      ':' +
      String(sec % 60).padStart(2, '0');
  return (neg ? '-' : '') + head + fs + ' s';
}

/* 1-2-5 x 10^e ns steps, the smallest >= x (at least 1 ns). */
export function niceStep(x: number): number {
  if (!(x > 1)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x * (1 - 1e-12)) return Math.round(m * p);
  return Math.round(10 * p);
}

export interface Ticks {
  step: number; // ns
  decimals: number;
  style: TimeStyle;
  at: number[]; // offsets, ns (integers)
  labels: string[];
}

/* Ticks for the view [t0, t1) drawn over width px: a 1-2-5 step such that
   labels (measured with textWidth) never overlap, labels with the decimals
   the step needs; at least one tick per 220 px where the zoom allows. */
export function axisTicks(
  t0: number,
  t1: number,
  width: number,
  textWidth: (s: string) => number = (s) => s.length * 6.5,
): Ticks {
  const span = Math.max(1e-3, t1 - t0);
  const style = styleFor(t1);
  let step = niceStep((span / Math.max(1, width)) * 90);
  for (let tries = 0; tries < 8; tries++) {
    const decimals = decimalsFor(step);
    const probe = fmtRel(Math.max(0, Math.floor(t1)), decimals, style);
    const need = textWidth(probe) + 14;
    if ((step / span) * width >= need) break;
    step = niceStep(step * 1.5);
  }
  const decimals = decimalsFor(step);
  const at: number[] = [];
  const k0 = Math.ceil(t0 / step);
  for (let k = k0; k * step <= t1 && at.length < 1000; k++) at.push(k * step);
  return { step, decimals, style, at, labels: at.map((t) => fmtRel(t, decimals, style)) };
}

/* Decimals that resolve 1/1000 of a span (a table's start column shows
   rows of the zoomed range this precisely). */
export function decimalsForSpan(spanNs: number): number {
  return decimalsFor(niceStep(Math.max(1, spanNs / 1000)));
}

/* An absolute epoch-ns time as UTC to the nanosecond:
   2026-12-01 13:33:12.123 456 789 UTC. */
export function fmtWallNs(ns: bigint | string): string {
  const b = typeof ns === 'bigint' ? ns : BigInt(ns);
  const ms = b / 1000000n;
  const d = new Date(Number(ms));
  const sub = String(b % 1000000000n).padStart(9, '0');
  const iso = d.toISOString(); // 2026-12-01T13:33:12.123Z
  return iso.slice(0, 10) + ' ' + iso.slice(11, 19) + '.' + groups(sub) + ' UTC';
}
