// testHooks.ts - what the browser tests (web/e2e/run.mjs, bench/web) read of
// the views, as window.__uiTest: the work in flight, the last timeline and
// flame-graph draws and what is where on them.
//
// Off unless the page set window.__gpuflTestHooks = true before the app's
// script ran (the tests do, with Playwright's addInitScript): a normal page
// has no window.__uiTest and every call here is a no-op.
import { inflight } from './api';

export interface TimelineDraw {
  t0: number;
  t1: number;
  base: string;
  rects: number; // kernel lanes painted
  labels: number;
  texts: { text: string; full: string; w: number }[]; // names drawn on kernels and scopes: as drawn, whole, the cell's room (css px)
  font: string; // the canvas font they were drawn in
  mode: string; // raw: every lane exact; summary: some lane from columns; loading: a stretch not loaded
  ms: number;
  frames: number[]; // draw times (ms), newest last
  phases: [number, number, number][]; // per draw: painting the buffer, putImageData, text and overlays (ms)
  plotX: number; // the plot's left edge and width, css px
  plotW: number;
  height: number;
  res: number; // ns per tile column
  ticks: string[]; // the axis' labels
  tickAt: number[]; // their times (offsets, ns)
  scopes: { name: string; t: number; dur: number; depth: number }[]; // scope instances in view
  follow: boolean; // live: following the end of a running session
  hi: number; // the session's span (ns)
  marks: number[];
  area: { t0: number; t1: number; lanes: string[] } | null;
  flow: { kid: number; tid: number | null } | null; // the launch -> kernel arrow drawn
  lanes: { key: string; kind: string; y: number; h: number; label: string }[];
}

export interface TimelineHit {
  x: number;
  y: number;
  w: number;
  h: number;
  lane: string;
  id: number | null;
  count: number;
}

export interface FlameDraw {
  total: number;
  rects: number;
  focus: string;
  view: string;
}

export interface FlameHit {
  x: number;
  y: number;
  w: number;
  h: number;
  name: string;
  total: number;
  self: number;
  count: number;
  depth: number;
  path: string[];
}

/* The OOM report the Memory view shows (MemoryOom.tsx). */
export interface OomDraw {
  id: number;
  request: string[]; // the frames that asked, root first
  liveTotal: number; // bytes of the live-set flame graph's root
  liveRects: number;
  events: number; // calls drawn on the timeline
}

export interface UiTest {
  idle: () => boolean; // no fetch and no view work pending
  busy: number; // views' pending work besides fetches
  timeline?: TimelineDraw;
  timelineHits?: () => TimelineHit[];
  timelineSet?: (t0: number, t1: number) => void;
  timelineArea?: (t0: number, t1: number, lanes: string[] | null) => void;
  system?: { r0: number; r1: number; live: boolean }; // the System charts' x range (s from the session start)
  flame?: FlameDraw;
  flameHits?: () => FlameHit[];
  oom?: OomDraw;
}

declare global {
  interface Window {
    __gpuflTestHooks?: boolean;
    __uiTest?: UiTest;
  }
}

function install(): UiTest | null {
  if (typeof window === 'undefined' || window.__gpuflTestHooks !== true) return null;
  const t: UiTest = { busy: 0, idle: () => inflight.n === 0 && t.busy === 0 };
  window.__uiTest = t;
  return t;
}

const ui = install();

export const testHooks = {
  /* true when a test asked for the hooks */
  on: ui !== null,
  /* a view started (+1) or finished (-1) work the tests must wait for */
  busy(delta: 1 | -1): void {
    if (ui) ui.busy += delta;
  },
  /* publish what a view drew or offers (timeline, flame, ...) */
  set<K extends Exclude<keyof UiTest, 'idle' | 'busy'>>(key: K, value: UiTest[K]): void {
    if (ui) ui[key] = value;
  },
};
