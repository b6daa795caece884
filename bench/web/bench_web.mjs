// bench_web.mjs - the web UI on a session with N kernels (default 1M) in
// headless Chromium against a real gpufl-server: time to the first
// timeline render, then frame times phase by phase (docs/ui.md
// "Performance"), and the tab's memory.  Figures, not a test.  Usage:
//   node bench/web/bench_web.mjs --bin build/bin [--kernels 1000000] [--dist web/dist]
//                                [--width 1600] [--url URL --sid SID]
// --url/--sid: a running gpufl-server (admin token ADMIN of
// web/e2e/fixture.mjs) and a session already on it, instead of a fresh
// server and N generated kernels (for repeated runs on the same data).
// Phases (one input event per animation frame, as a user's wheel or keys
// arrive; frame = the interval between animation frames, draw = the
// timeline's own draw time, long tasks = PerformanceObserver "longtask"):
//   overview-zoom   zoom in and out around the whole session
//   overview-pan    pan back and forth with half the session in view
//   zoom-in         from the whole session down to 1 µs
//   pan-1us         pan at 1 µs
//   zoom-out        from 1 µs back out to the whole session
//   pan-after-stop  pan again 350 ms after the view stopped (the Kernels
//                   table's answer for the stop arrives while it moves)
//   keys            W/S/A/D held (Perfetto's keys), at mid zoom
// Then the completeness checks of web/e2e/timeline.mjs on this session (CI
// runs them on 200k kernels; here on N, default 1M): tl_complete (50
// random windows, canvas pixels against the API's kernels per lane and
// column) and tl_calls_complete (the API lanes against GET /calls).
// --no-complete skips them.  The exit status is 1 when one fails.
// --trace FILE: a Chromium performance trace (CDP Tracing: the renderer's
// tasks, layout, paint, GC, V8 samples) over the phases, written to FILE
// (open it in chrome://tracing or Perfetto; bench/web/trace_summary.mjs
// says what the slow frames' tasks spent their time on).
// Exits 0 with "SKIP" when Chromium or the npm packages are missing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const WEB = path.resolve(here, '..', '..', 'web');
const args = Object.fromEntries(
  process.argv.slice(2).reduce((a, x, i, all) => (x.startsWith('--') ? [...a, [x.slice(2), all[i + 1]]] : a), []),
);
const BIN = path.resolve(args.bin ?? 'build/bin');
const N = Number(args.kernels ?? process.env.GPUFL_BENCH_WEB_KERNELS ?? 1000000);
const DIST = path.resolve(args.dist ?? path.join(WEB, 'dist'));
const WIDTH = Number(args.width ?? 1600);
const CHROMIUM = process.env.GPUFL_CHROMIUM ?? '/usr/bin/chromium';
const skip = (why) => {
  console.log('bench_web: SKIP: ' + why);
  process.exit(0);
};
if (!fs.existsSync(CHROMIUM)) skip('no Chromium at ' + CHROMIUM);
if (!fs.existsSync(path.join(DIST, 'index.html'))) skip('no built UI in ' + DIST + ' (make web)');
// figures of an old build are figures of old code: say so
{
  const newest = (d) =>
    fs
      .readdirSync(d, { withFileTypes: true })
      .reduce(
        (m, e) =>
          Math.max(m, e.isDirectory() ? newest(path.join(d, e.name)) : fs.statSync(path.join(d, e.name)).mtimeMs),
        0,
      );
  const src = path.join(WEB, 'src');
  if (fs.existsSync(src) && newest(src) > fs.statSync(path.join(DIST, 'index.html')).mtimeMs)
    console.log(`bench_web: WARNING: ${DIST} is older than web/src: these figures measure the last build (make web)`);
}
let chromium;
try {
  ({ chromium } = createRequire(path.join(WEB, 'package.json'))('playwright-core'));
} catch {
  skip('playwright-core missing (make web)');
}
const { ADMIN, startServer, req } = await import(path.join(WEB, 'e2e', 'fixture.mjs'));
const { ingestLines, sessionLines } = await import(path.join(WEB, 'e2e', 'gen.mjs'));
const T = await import(path.join(WEB, 'e2e', 'timeline.mjs'));
const COMPLETE = !process.argv.includes('--no-complete');
let failed = 0;

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const f1 = (x) => (isFinite(x) ? x.toFixed(1) : '-');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpufl-bench-web-'));
let server;
let ctx;
try {
  let sid = args.sid;
  if (args.url) server = { url: args.url, stop: () => {} };
  else {
    server = await startServer({ bin: BIN, uiDir: DIST, tmp });
    sid = 'b0b0b0b0-0000-4000-8000-' + String(N).padStart(12, '0');
    const t0 = BigInt(Date.now()) * 1000000n - 3600n * 1000000000n;
    const t = Date.now();
    const sent = await ingestLines(server.url, ADMIN, sessionLines(sid, t0, N, { copyEvery: 2000, app: 'bench_web' }));
    console.log(`bench_web: ingested ${sent} lines in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  // ns times are decimal strings (docs/api.md "Numbers")
  const s = JSON.parse((await req(server.url, 'GET', '/api/v1/sessions/' + sid)).text);
  const span = Number(BigInt(s.last_ts) - BigInt(s.first_ts));
  const nk = s.counts.kernels;
  console.log(`bench_web: session ${sid}: ${nk} kernels, ${s.counts.ops} copies, span ${(span / 1e9).toFixed(1)} s`);

  const udd = fs.mkdtempSync(path.join(tmp, 'udd-'));
  ctx = await chromium.launchPersistentContext(udd, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--force-device-scale-factor=1',
      '--enable-precise-memory-info',
    ],
    viewport: { width: WIDTH, height: 900 },
  });
  // the UI's test hooks (window.__uiTest, web/src/lib/testHooks.ts), and a
  // long-task observer from the first script on
  await ctx.addInitScript(() => {
    window.__gpuflTestHooks = true;
    window.__long = [];
    try {
      new PerformanceObserver((l) =>
        l.getEntries().forEach((e) => window.__long.push([e.startTime, e.duration])),
      ).observe({
        type: 'longtask',
        buffered: true,
      });
    } catch {
      /* no longtask entries in this browser */
    }
  });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  await page.goto(server.url + '/');
  await page.evaluate((tok) => sessionStorage.setItem('gpufl.token', tok), ADMIN);
  const idle = () =>
    page.waitForFunction(
      () => {
        const w = window;
        if (!w.__uiTest || !w.__uiTest.idle()) {
          w.__idleSince = 0;
          return false;
        }
        w.__idleSince = w.__idleSince || performance.now();
        return performance.now() - w.__idleSince > 200;
      },
      null,
      { polling: 50, timeout: 120000 },
    );

  // first render: a fresh load of the Kernels view; the first frame whose
  // kernel lanes are drawn from data (no stretch still loading)
  await page.goto(server.url + '/#/kernels?s=' + sid);
  await page.reload();
  const first = await page.evaluate(
    () =>
      new Promise((res) => {
        const tick = () => {
          const tl = window.__uiTest && window.__uiTest.timeline;
          if (tl && tl.mode !== 'loading' && tl.lanes.some((l) => l.kind === 'kernel'))
            res({
              ms: performance.now(),
              mode: tl.mode,
              lanes: tl.lanes.filter((l) => l.kind === 'kernel').length,
            });
          else requestAnimationFrame(tick);
        };
        tick();
      }),
  );
  await idle();
  const settled = await page.evaluate(() => performance.now());
  console.log(
    `bench_web: first render ${first.ms.toFixed(0)} ms after navigation (${first.lanes} kernel lanes, ${first.mode}); all fetches done at ${settled.toFixed(0)} ms; target <= ${nk > 2e6 ? 2000 : 1000} ms`,
  );

  /* One phase: `frames` animation frames, each dispatching ev(i) (a wheel
     event on the canvas, or a key) before the frame is drawn. */
  const phase = async (name, frames, setup, evs, pause = 0) => {
    if (setup) {
      await page.evaluate(([a, b]) => window.__uiTest.timelineSet(a, b), setup);
      // pause: the user stops this long and moves again (the page's
      // answers to the stop - the Kernels table of the view - arrive while
      // it moves), else until the page is idle
      if (pause) await page.waitForTimeout(pause);
      else await idle();
    }
    const r = await page.evaluate(
      ([frames, evs]) =>
        new Promise((res) => {
          const c = document.querySelector('[data-testid=timeline-canvas]');
          const rect = c.getBoundingClientRect();
          const tl = window.__uiTest.timeline;
          const drawsBefore = tl.frames.length;
          const phasesBefore = tl.phases.length;
          const longBefore = window.__long.length;
          // deltas: between the frames' own times (the rAF timestamp, the
          // BeginFrame the callback runs in: a frame the page missed shows
          // as one interval of two vsyncs); late: between the callbacks'
          // performance.now(), which adds when in its frame each callback
          // ran (scheduling jitter of a busy machine, not a missed frame)
          const deltas = [];
          const late = [];
          let last = -1;
          let lastNow = performance.now();
          let i = 0;
          const held = new Set();
          const step = (ts) => {
            const now = performance.now();
            if (last >= 0) deltas.push(ts - last);
            last = ts;
            late.push(now - lastNow);
            lastNow = now;
            const e = evs[i % evs.length];
            if (e.key) {
              if (!held.has(e.key)) {
                for (const k of held) window.dispatchEvent(new KeyboardEvent('keyup', { code: k, key: k }));
                held.clear();
                window.dispatchEvent(new KeyboardEvent('keydown', { code: e.key, key: e.key }));
                held.add(e.key);
              }
            } else
              c.dispatchEvent(
                new WheelEvent('wheel', {
                  deltaY: e.dy,
                  shiftKey: !!e.shift,
                  clientX: rect.left + tl.plotX + tl.plotW * (e.at ?? 0.4),
                  clientY: rect.top + 60,
                  bubbles: true,
                  cancelable: true,
                }),
              );
            if (++i < frames) requestAnimationFrame(step);
            else
              setTimeout(() => {
                for (const k of held) window.dispatchEvent(new KeyboardEvent('keyup', { code: k, key: k }));
                const t = window.__uiTest.timeline;
                res({
                  deltas,
                  late: late.slice(1),
                  draws: t.frames.slice(drawsBefore),
                  phases: t.phases.slice(phasesBefore),
                  long: window.__long.slice(longBefore).map((x) => x[1]),
                  view: [t.t0, t.t1],
                });
              }, 50);
          };
          requestAnimationFrame(step);
        }),
      [frames, evs],
    );
    const p50 = pct(r.deltas, 50);
    const p95 = pct(r.deltas, 95);
    const lmax = r.long.length ? Math.max(...r.long) : 0;
    // a frame interval past 1.5 vsyncs (25 ms at 60 Hz) is a frame missed
    const missed = r.deltas.filter((d) => d > 25).length;
    console.log(
      `bench_web: ${name.padEnd(14)} ${String(r.deltas.length).padStart(3)} frames: frame median ${f1(p50)} ms, p95 ${f1(p95)} ms, max ${f1(Math.max(...r.deltas))} ms, ${missed} missed (callbacks: median ${f1(pct(r.late, 50))}, p95 ${f1(pct(r.late, 95))} ms); draw median ${pct(r.draws, 50).toFixed(2)} ms, p95 ${pct(r.draws, 95).toFixed(2)} ms (${r.draws.length} draws); long tasks ${r.long.length}, longest ${lmax.toFixed(0)} ms; ${p50 <= 16.8 && p95 <= 16.8 * 1.05 && lmax <= 50 ? 'within' : 'OVER'} budget (median and p95 <= 16 ms, no long task > 50 ms)`,
    );
    // where a draw's time goes: the lanes into the pixel buffer, the
    // buffer onto the canvas, then text and overlays
    const part = (j) => r.phases.map((x) => x[j]);
    console.log(
      `bench_web: ${''.padEnd(14)}     draw p50/p95 by part: lanes ${pct(part(0), 50).toFixed(2)}/${pct(part(0), 95).toFixed(2)} ms, putImageData ${pct(part(1), 50).toFixed(2)}/${pct(part(1), 95).toFixed(2)} ms, text and overlays ${pct(part(2), 50).toFixed(2)}/${pct(part(2), 95).toFixed(2)} ms`,
    );
    await idle();
    return r;
  };

  // --trace: Chromium's own trace of the phases (DevTools' Performance panel)
  const TRACE = args.trace ? path.resolve(args.trace) : null;
  let tcdp = null;
  const traceEvents = [];
  if (TRACE) {
    tcdp = await ctx.newCDPSession(page);
    tcdp.on('Tracing.dataCollected', (d) => traceEvents.push(...d.value));
    await tcdp.send('Tracing.start', {
      transferMode: 'ReportEvents',
      traceConfig: {
        includedCategories: [
          'devtools.timeline',
          'disabled-by-default-devtools.timeline',
          'disabled-by-default-devtools.timeline.frame',
          'blink.user_timing',
          'v8.execute',
          'v8',
          'disabled-by-default-v8.cpu_profiler',
          'toplevel',
        ],
      },
    });
  }
  const whole = [0, span];
  const oscillate = (n, d) =>
    Array.from({ length: n }, (_, i) => ({
      dy: Math.floor(i / 20) % 2 ? d : -d,
      at: 0.5,
    }));
  await phase('overview-zoom', 120, whole, oscillate(120, 40));
  await phase(
    'overview-pan',
    120,
    [span * 0.25, span * 0.75],
    Array.from({ length: 120 }, (_, i) => ({
      dy: Math.floor(i / 30) % 2 ? -40 : 40,
      shift: true,
    })),
  );
  // 1.0015^-120 per frame: from the whole session to 1 µs in ~100 frames
  const toUs = Math.ceil(Math.log(1000 / span) / Math.log(Math.pow(1.0015, -120)));
  const zin = await phase('zoom-in', toUs + 5, whole, [{ dy: -120, at: 0.37 }]);
  await phase(
    'pan-1us',
    90,
    null,
    Array.from({ length: 90 }, (_, i) => ({
      dy: i < 45 ? 30 : -30,
      shift: true,
    })),
  );
  void zin;
  await phase('zoom-out', toUs + 10, null, [{ dy: 120, at: 0.37 }]);
  // pan again 350 ms after a stop: the table's list of the stopped view
  // (asked 300 ms after it) comes back while the timeline moves
  await phase(
    'pan-after-stop',
    120,
    [span * 0.2, span * 0.7],
    Array.from({ length: 120 }, (_, i) => ({
      dy: Math.floor(i / 30) % 2 ? -40 : 40,
      shift: true,
    })),
    350,
  );
  await phase(
    'keys',
    120,
    [span * 0.3, span * 0.3 + span / 64],
    [
      ...Array(30).fill({ key: 'KeyW' }),
      ...Array(30).fill({ key: 'KeyA' }),
      ...Array(30).fill({ key: 'KeyS' }),
      ...Array(30).fill({ key: 'KeyD' }),
    ],
  );

  if (tcdp) {
    const done = new Promise((r) => tcdp.once('Tracing.tracingComplete', r));
    await tcdp.send('Tracing.end');
    await done;
    fs.writeFileSync(TRACE, JSON.stringify({ traceEvents }));
    console.log(`bench_web: trace of the phases (${traceEvents.length} events) in ${TRACE}`);
  }

  // memory of the tab: JS heap (CDP) and the renderer processes' RSS
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('Performance.enable');
  const m = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
  const heap = (m.JSHeapUsedSize ?? 0) / 1048576;
  // the renderer of this tab: the biggest renderer of this browser (the
  // others are spare/utility ones)
  const rend = [];
  for (const p of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer') || !cmd.includes(udd)) continue;
      const st = fs.readFileSync(`/proc/${p}/status`, 'utf8');
      const sm = fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      rend.push({
        pid: p,
        rss: Number(/VmRSS:\s+(\d+)/.exec(st)[1]) / 1024,
        pss: Number(/Pss:\s+(\d+)/.exec(sm)[1]) / 1024,
      });
    } catch {
      /* gone */
    }
  }
  rend.sort((a, b) => b.rss - a.rss);
  const tab = rend[0];
  console.log(
    `bench_web: tab memory: JS heap ${heap.toFixed(1)} MB; tab renderer RSS ${tab ? tab.rss.toFixed(0) : 'n/a'} MB, PSS ${tab ? tab.pss.toFixed(0) : 'n/a'} MB (${rend.length} renderer processes, RSS ${rend.map((x) => x.rss.toFixed(0)).join('/')} MB); target <= 300 MB`,
  );

  // completeness at N kernels (web/e2e/timeline.mjs): pixels against the API
  if (COMPLETE) {
    const get = async (p) => JSON.parse((await req(server.url, 'GET', '/api/v1/' + p)).text);
    const check = (name, ok, detail) => {
      console.log(`bench_web: ${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
      if (!ok) failed++;
    };
    for (const [name, fn] of [
      ['tl_complete', T.testComplete],
      ['tl_calls_complete', T.testCallsComplete],
    ]) {
      const t = Date.now();
      try {
        await fn({ page, U: server.url, get, check, sid, n: nk });
      } catch (e) {
        check(name, false, 'threw: ' + (e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e));
      }
      console.log(`bench_web: ${name} took ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
  }
} finally {
  if (ctx) await ctx.close().catch(() => {});
  if (server) server.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
