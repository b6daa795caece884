// format.ts - units as the views show them.
import type { Int } from './api';

/* ns as the views show them; an API integer (Int) may come as a string. */
export function fmtNs(v: Int): string {
  const ns = Number(v);
  if (!isFinite(ns)) return '-';
  const a = Math.abs(ns);
  if (a < 1e3) return ns.toFixed(0) + ' ns';
  if (a < 1e6) return (ns / 1e3).toFixed(a < 1e4 ? 2 : 1) + ' µs';
  if (a < 1e9) return (ns / 1e6).toFixed(a < 1e7 ? 2 : 1) + ' ms';
  return (ns / 1e9).toFixed(a < 1e10 ? 3 : 1) + ' s';
}

export function fmtBytes(x: Int): string {
  const b = Number(x);
  if (!isFinite(b)) return '-';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = b;
  while (Math.abs(v) >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? v.toFixed(0) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + u[i];
}

export function fmtPct(x: number, digits = 1): string {
  return (x * 100).toFixed(digits) + ' %';
}

/* Wall clock of an epoch-ns time (string or bigint). */
export function fmtWall(ns: bigint | string | number): string {
  const b = typeof ns === 'bigint' ? ns : BigInt(ns);
  const ms = Number(b / 1000000n);
  const d = new Date(ms);
  return d.toISOString().replace('T', ' ').replace('Z', ' UTC');
}

export function fmtDim(d: number[] | null | undefined): string {
  if (!d || !d.length) return '-';
  const x = [d[0] ?? 1, d[1] ?? 1, d[2] ?? 1];
  return x.join(' × ');
}
