// bench_web.mjs - the web UI on a session with N kernels (default 1M) in
// headless Chromium against a real gpufl-server: time to the first timeline
// render, frame times while zooming and panning, memory of the tab.
// Figures, not a test.  Usage:
//   node bench/web/bench_web.mjs --bin build/bin [--kernels 1000000] [--dist web/dist]
// Exits 0 with "SKIP" when Chromium or the npm packages are missing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const WEB = path.resolve(here, '..', '..', 'web');
const args = Object.fromEntries(process.argv.slice(2).reduce((a, x, i, all) => (x.startsWith('--') ? [...a, [x.slice(2), all[i + 1]]] : a), []));
const BIN = path.resolve(args.bin ?? 'build/bin');
const N = Number(args.kernels ?? process.env.GPUFL_BENCH_WEB_KERNELS ?? 1000000);
const DIST = path.resolve(args.dist ?? path.join(WEB, 'dist'));
const CHROMIUM = process.env.GPUFL_CHROMIUM ?? '/usr/bin/chromium';
const skip = (why) => {
  console.log('bench_web: SKIP: ' + why);
  process.exit(0);
};
if (!fs.existsSync(CHROMIUM)) skip('no Chromium at ' + CHROMIUM);
if (!fs.existsSync(path.join(DIST, 'index.html'))) skip('no built UI in ' + DIST + ' (make web)');
let chromium;
try {
  ({ chromium } = createRequire(path.join(WEB, 'package.json'))('playwright-core'));
} catch {
  skip('playwright-core missing (make web)');
}
const { ADMIN, startServer, req } = await import(path.join(WEB, 'e2e', 'fixture.mjs'));

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

/* N kernels on 2 GPUs x 4 streams, 12 kernel names, ~200 us apart per lane. */
function* lines(sid, t0) {
  const env = (seq, ts, rest) => `{"v":1,"sid":"${sid}","st":"device","seq":${seq},"ts":${ts},${rest}}`;
  let seq = 0;
  yield env(seq++, t0, `"type":"session","app":"bench_web","host":"bench","pid":1,"start":${t0},"file":0,"lib":"0.1.0","simulated":true,"cmd":"bench_web (generated kernels)","interval_ms":0,"engines":{"sim":"on"},"devices":[{"id":0,"name":"Simulated GPU","simulated":true},{"id":1,"name":"Simulated GPU","simulated":true}]`);
  const names = ['gemm_bf16_128x256', 'flash_fwd_kernel', 'flash_bwd_kernel', 'layer_norm_fwd', 'layer_norm_bwd', 'softmax_warp', 'elementwise_add', 'reduce_sum', 'adam_update', 'all_reduce_ring', 'embedding_bwd', 'dropout_fwd'];
  for (let i = 0; i < names.length; i++) {
    yield env(seq++, t0, `"type":"dict","id":${i + 1},"kind":"name","name":"${names[i]}"`);
    yield env(seq++, t0, `"type":"dict","id":${100 + i},"kind":"launch","name":${i + 1},"block":[256],"regs":${32 + i * 8},"occ":0.5,"lim":"regs"`);
  }
  const lanes = 8;
  const next = new Array(lanes).fill(0n).map((_, i) => t0 + 1000n + BigInt(i * 1000));
  let x = 12345;
  for (let k = 0; k < N; k++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const lane = k % lanes;
    const dur = 2000 + (x % 150000);
    const ts = next[lane];
    next[lane] = ts + BigInt(dur + 1000 + (x % 50000));
    const dev = lane >> 2;
    yield env(seq++, ts, `"type":"kernel",${dev ? '"dev":1,' : ''}"stream":${(lane & 3) + 7},"corr":${k + 1},"cfg":${100 + (x % 12)},"grid":[${1 + (x % 4096)}],"dur":${dur}`);
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpufl-bench-web-'));
let server;
let ctx;
try {
  server = await startServer({ bin: BIN, uiDir: DIST, tmp });
  const sid = 'b0b0b0b0-0000-4000-8000-' + String(N).padStart(12, '0');
  const t0 = BigInt(Date.now()) * 1000000n - 3600n * 1000000000n;
  let t = Date.now();
  let batch = [];
  let sent = 0;
  const flush = async () => {
    const body = zlib.gzipSync(batch.join('\n') + '\n', { level: 1 });
    const r = await fetch(server.url + '/api/v1/events/device', { method: 'POST', headers: { Authorization: 'Bearer ' + ADMIN, 'Content-Type': 'application/x-ndjson', 'Content-Encoding': 'gzip' }, body });
    const j = await r.json();
    if (r.status !== 200 || j.rejected) throw new Error('ingest: ' + r.status + ' ' + JSON.stringify(j).slice(0, 300));
    sent += batch.length;
    batch = [];
  };
  for (const l of lines(sid, t0)) {
    batch.push(l);
    if (batch.length === 100000) await flush();
  }
  if (batch.length) await flush();
  const ingestS = (Date.now() - t) / 1000;
  // ns times are decimal strings (docs/api.md "Numbers")
  const s = JSON.parse((await req(server.url, 'GET', '/api/v1/sessions/' + sid)).text);
  console.log(`bench_web: ingested ${sent} lines (${s.counts.kernels} kernels, span ${(Number(BigInt(s.last_ts) - BigInt(s.first_ts)) / 1e9).toFixed(1)} s) in ${ingestS.toFixed(1)} s`);

  const udd = fs.mkdtempSync(path.join(tmp, 'udd-'));
  ctx = await chromium.launchPersistentContext(udd, { executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--force-device-scale-factor=1', '--enable-precise-memory-info'], viewport: { width: 1600, height: 900 } });
  // the UI's test hooks (window.__uiTest, web/src/lib/testHooks.ts)
  await ctx.addInitScript(() => {
    window.__gpuflTestHooks = true;
  });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  await page.goto(server.url + '/');
  await page.evaluate((tok) => sessionStorage.setItem('gpufl.token', tok), ADMIN);
  // first render: a fresh load of the Kernels view of that session
  await page.goto(server.url + '/#/kernels?s=' + sid);
  await page.reload();
  const first = await page.evaluate(
    () =>
      new Promise((res) => {
        const tick = () => {
          const tl = window.__uiTest && window.__uiTest.timeline;
          if (tl && tl.rects > 0) res({ ms: performance.now(), rects: tl.rects, mode: tl.mode });
          else requestAnimationFrame(tick);
        };
        tick();
      }),
  );
  console.log(`bench_web: first timeline render ${first.ms.toFixed(0)} ms after navigation (${first.rects} rects, ${first.mode}); target <= 2000 ms`);
  await page.waitForFunction(() => window.__uiTest.idle(), null, { polling: 100, timeout: 60000 });

  // zoom in 90 frames, pan 90 frames, zoom out 90 frames: one wheel event per
  // animation frame, on the canvas, as a user's wheel would arrive
  const r = await page.evaluate(
    () =>
      new Promise((res) => {
        const c = document.querySelector('[data-testid=timeline-canvas]');
        const rect = c.getBoundingClientRect();
        const deltas = [];
        const drawsBefore = window.__uiTest.timeline.frames.length;
        let last = performance.now();
        let i = 0;
        const step = () => {
          const now = performance.now();
          deltas.push(now - last);
          last = now;
          const phase = Math.floor(i / 90);
          const ev = phase === 0 ? { deltaY: -60 } : phase === 1 ? { deltaY: 40, shiftKey: true } : { deltaY: 60 };
          c.dispatchEvent(new WheelEvent('wheel', { ...ev, clientX: rect.left + 130 + (rect.width - 130) * 0.4, clientY: rect.top + 60, bubbles: true, cancelable: true }));
          if (++i < 270) requestAnimationFrame(step);
          else setTimeout(() => res({ deltas: deltas.slice(1), draws: window.__uiTest.timeline.frames.slice(drawsBefore), mode: window.__uiTest.timeline.mode }), 50);
        };
        requestAnimationFrame(step);
      }),
  );
  console.log(`bench_web: zoom/pan, ${r.deltas.length} frames: frame interval median ${pct(r.deltas, 50).toFixed(1)} ms, p95 ${pct(r.deltas, 95).toFixed(1)} ms, max ${Math.max(...r.deltas).toFixed(1)} ms; timeline draw median ${pct(r.draws, 50).toFixed(2)} ms, p95 ${pct(r.draws, 95).toFixed(2)} ms (${r.draws.length} draws); target median <= 16 ms`);
  await page.waitForFunction(() => window.__uiTest.idle(), null, { polling: 100, timeout: 60000 });

  // memory of the tab: JS heap (CDP) and the renderer processes' RSS
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  const m = Object.fromEntries((await cdp.send('Performance.getMetrics').catch(async () => (await cdp.send('Performance.enable'), cdp.send('Performance.getMetrics')))).metrics.map((x) => [x.name, x.value]));
  await cdp.send('Performance.enable');
  const m2 = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
  const heap = (m2.JSHeapUsedSize ?? m.JSHeapUsedSize ?? 0) / 1048576;
  // the renderer of this tab: the one whose JS heap CDP reports, i.e. the
  // biggest renderer of this browser (the others are spare/utility ones)
  const rend = [];
  for (const p of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer') || !cmd.includes(udd)) continue;
      const st = fs.readFileSync(`/proc/${p}/status`, 'utf8');
      const sm = fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      rend.push({ pid: p, rss: Number(/VmRSS:\s+(\d+)/.exec(st)[1]) / 1024, pss: Number(/Pss:\s+(\d+)/.exec(sm)[1]) / 1024 });
    } catch {
      /* gone */
    }
  }
  rend.sort((a, b) => b.rss - a.rss);
  const tab = rend[0];
  console.log(`bench_web: tab memory: JS heap ${heap.toFixed(1)} MB; tab renderer RSS ${tab ? tab.rss.toFixed(0) : 'n/a'} MB, PSS ${tab ? tab.pss.toFixed(0) : 'n/a'} MB (${rend.length} renderer processes, RSS ${rend.map((x) => x.rss.toFixed(0)).join('/')} MB); target <= 300 MB`);
} finally {
  if (ctx) await ctx.close().catch(() => {});
  if (server) server.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}
