// complete.mjs - issue 18's completeness checks on a session of N kernels
// (default 1M): a fresh gpufl-server, N generated kernels (gen.mjs: 2 GPUs
// x 4 streams, launch calls, copies), then in headless Chromium
// tl_complete (50 random windows: every column where the API has a
// kernel of a lane is drawn in that lane, read off the canvas pixels) and
// tl_calls_complete (12 windows: the API lanes against GET /calls), the
// same checks web_e2e runs on its 200k session (timeline.mjs).
//
//   node e2e/complete.mjs --bin BUILD/bin --dist DIST [--kernels N]
//
// Exit: 0 both pass, 1 one failed, 77 no Chromium/node modules/build
// (skip).  ctest web_complete_1m.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN, startServer, req } from './fixture.mjs';
import { ingestLines, sessionLines } from './gen.mjs';
import * as T from './timeline.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((a, x, i, all) => (x.startsWith('--') ? [...a, [x.slice(2), all[i + 1]]] : a), []),
);
const BIN = path.resolve(args.bin ?? 'build/bin');
const DIST = path.resolve(args.dist ?? 'dist');
const N = Number(args.kernels ?? 1000000);
const CHROMIUM =
  process.env.GPUFL_CHROMIUM ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
const skip = (why) => {
  console.log('SKIP: ' + why);
  process.exit(77);
};
if (!CHROMIUM) skip('no Chromium found (/usr/bin/chromium): scripts/deps.sh test installs it');
let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  skip('playwright-core is not installed: run `make web` or `cd web && npm ci`');
}
if (!fs.existsSync(path.join(DIST, 'index.html'))) skip('no built UI in ' + DIST);
if (!fs.existsSync(path.join(BIN, 'gpufl-server'))) skip('missing ' + path.join(BIN, 'gpufl-server'));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpufl-web-complete-'));
let server;
let browser;
let failed = 0;
const check = (name, ok, detail) => {
  console.log((ok ? 'ok   ' : 'FAIL ') + name + ': ' + detail);
  if (!ok) failed++;
};
try {
  server = await startServer({ bin: BIN, uiDir: DIST, tmp });
  const U = server.url;
  const sid = 'c0c0c0c0-0000-4000-8000-' + String(N).padStart(12, '0');
  const t0 = BigInt(Date.now()) * 1000000n - 3600n * 1000000000n;
  let t = Date.now();
  const sent = await ingestLines(U, ADMIN, sessionLines(sid, t0, N, { copyEvery: 2000, app: 'web_complete' }));
  console.log(`ingested ${sent} lines in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  const get = async (p) => JSON.parse((await req(U, 'GET', '/api/v1/' + p)).text);
  const nk = (await get('sessions/' + sid)).counts.kernels;
  check('ingest', nk === N, `the server counts ${nk} kernels of the ${N} sent`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--force-device-scale-factor=1'],
  });
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await ctx.addInitScript(() => {
    window.__gpuflTestHooks = true;
  });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => check('page_error', false, String(e)));
  await page.goto(U + '/');
  await page.evaluate((tok) => sessionStorage.setItem('gpufl.token', tok), ADMIN);
  await page.reload();
  for (const [name, fn] of [
    ['tl_complete', T.testComplete],
    ['tl_calls_complete', T.testCallsComplete],
  ]) {
    t = Date.now();
    try {
      await fn({ page, U, get, check, sid, n: nk });
    } catch (e) {
      check(name, false, 'threw: ' + (e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e));
    }
    console.log(`${name} took ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
} catch (e) {
  check('setup', false, 'threw: ' + (e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
