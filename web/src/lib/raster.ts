// raster.ts - the timeline's lanes painted into one pixel buffer (an
// ImageData's Uint32 view) and put on the canvas with one putImageData.
//
// Why not fillRect: on the software raster of CI machines a fillRect costs
// ~1.8 µs and a 1M-kernel overview needs ~13k of them per frame (25 ms);
// writing the same spans into a buffer costs ~1 ms (docs/ui.md
// "Performance", the anchors' measurements).  Each lane is painted as one
// row of pixels (spans of colour), then that row is copied to the lane's
// height, so the cost is per column, not per pixel.
//
// Colours are packed for ImageData on little-endian machines: 0xAABBGGRR.

export function rgb(r: number, g: number, b: number): number {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

export function hexColor(hex: string): number {
  const v = parseInt(hex.replace('#', ''), 16);
  return rgb((v >> 16) & 255, (v >> 8) & 255, v & 255);
}

/* a over b with alpha a (0..1), both opaque packed colours */
export function blend(fg: number, bg: number, a: number): number {
  const r = (fg & 255) * a + (bg & 255) * (1 - a);
  const g = ((fg >> 8) & 255) * a + ((bg >> 8) & 255) * (1 - a);
  const b = ((fg >> 16) & 255) * a + ((bg >> 16) & 255) * (1 - a);
  return rgb(Math.round(r), Math.round(g), Math.round(b));
}

export function hsl(h: number, s: number, l: number): number {
  const k = (n: number) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return rgb(Math.round(f(0) * 255), Math.round(f(8) * 255), Math.round(f(4) * 255));
}

/* A kernel name's hue: FNV-1a of the name without trailing digits (so
   gemm_128 and gemm_256 share a colour, as Perfetto does). */
export function nameHue(name: string): number {
  const s = name.replace(/\d+$/, '');
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return (h >>> 0) % 360;
}

export const BG = hexColor('#12151b');
export const LANE_BG = hexColor('#151a22');

/* Shades of one colour over the lane background: index 0..SHADES. */
export const SHADES = 8;
const shadeCache = new Map<number, Uint32Array>();
export function shades(c: number): Uint32Array {
  let s = shadeCache.get(c);
  if (!s) {
    s = new Uint32Array(SHADES + 1);
    for (let i = 0; i <= SHADES; i++) s[i] = blend(c, LANE_BG, 0.35 + (0.65 * i) / SHADES);
    shadeCache.set(c, s);
    if (shadeCache.size > 4096) shadeCache.clear();
  }
  return s;
}

/* A busy share (0..1) as a shade index: never 0 alpha, so a column with any
   kernel in it is always visibly drawn. */
export function shadeIndex(share: number): number {
  if (!(share > 0)) return 0;
  return Math.max(0, Math.min(SHADES, Math.round(share * SHADES)));
}

export class Raster {
  w: number;
  h: number;
  data: ImageData | null;
  px: Uint32Array;
  row: Uint32Array;

  constructor(w: number, h: number, make: ((w: number, h: number) => ImageData) | null) {
    this.w = Math.max(1, Math.floor(w));
    this.h = Math.max(1, Math.floor(h));
    this.data = make ? make(this.w, this.h) : null;
    this.px = this.data ? new Uint32Array(this.data.data.buffer) : new Uint32Array(this.w * this.h);
    this.row = new Uint32Array(this.w);
  }

  clear(c: number): void {
    this.px.fill(c);
  }

  /* start a lane: its row buffer filled with the background c */
  rowBegin(c: number): void {
    this.row.fill(c);
  }

  /* paint [x0, x1) (device px, fractions allowed) of the row; a span that
     covers less than a pixel still paints the pixel it starts in */
  span(x0: number, x1: number, c: number): void {
    let a = Math.floor(x0);
    let b = Math.ceil(x1);
    if (b <= a) b = a + 1;
    if (a < 0) a = 0;
    if (b > this.w) b = this.w;
    if (b <= a) return;
    this.row.fill(c, a, b);
  }

  /* one pixel of the row */
  dot(x: number, c: number): void {
    const a = Math.floor(x);
    if (a >= 0 && a < this.w) this.row[a] = c;
  }

  /* copy the row to rows [y0, y1) of the buffer, columns [x0, w) */
  rowCommit(y0: number, y1: number, x0 = 0): void {
    const a = Math.max(0, Math.floor(y0));
    const b = Math.min(this.h, Math.floor(y1));
    const src = x0 ? this.row.subarray(x0) : this.row;
    for (let y = a; y < b; y++) this.px.set(src, y * this.w + x0);
  }

  /* a filled rectangle straight into the buffer */
  rect(x0: number, y0: number, x1: number, y1: number, c: number): void {
    const a = Math.max(0, Math.floor(x0));
    const b = Math.min(this.w, Math.max(a + 1, Math.ceil(x1)));
    const ya = Math.max(0, Math.floor(y0));
    const yb = Math.min(this.h, Math.floor(y1));
    if (b <= a) return;
    for (let y = ya; y < yb; y++) this.px.fill(c, y * this.w + a, y * this.w + b);
  }

  /* a counter track: for each device column i, rows [yb - hs[i], yb) of
     column x0 + i in colour c (heights in device px; NaN: a gap) */
  bars(x0: number, hs: Float32Array, yb: number, c: number, from: Float32Array | null = null): void {
    const w = this.w;
    const px = this.px;
    const y1 = Math.min(this.h, Math.floor(yb));
    for (let i = 0; i < hs.length; i++) {
      const x = x0 + i;
      if (x < 0 || x >= w) continue;
      const hgt = hs[i];
      if (!(hgt > 0)) continue;
      const ya = Math.max(0, Math.floor(yb - hgt - (from ? from[i] : 0)));
      const yz = from ? Math.min(y1, Math.floor(yb - from[i])) : y1;
      for (let y = ya; y < yz; y++) px[y * w + x] = c;
    }
  }

  at(x: number, y: number): number {
    return this.px[y * this.w + x];
  }
}
