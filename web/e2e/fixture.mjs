// fixture.mjs - a real gpufl-server on 127.0.0.1 (ephemeral port, temp data
// folder) filled with simulated sessions from example_train, for the browser
// tests and the benchmark.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const ADMIN = 'web-e2e-admin-token-0123456789abcdef';

export async function startServer({ bin, uiDir, tmp, extra = [] }) {
  const dataDir = path.join(tmp, 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const log = fs.openSync(path.join(tmp, 'server.log'), 'w');
  const p = spawn(
    path.join(bin, 'gpufl-server'),
    ['--listen', '127.0.0.1:0', '--data-dir', dataDir, '--admin-token', ADMIN, '--ui-dir', uiDir, ...extra],
    { stdio: ['ignore', log, log] },
  );
  const t0 = Date.now();
  for (;;) {
    const text = fs.readFileSync(path.join(tmp, 'server.log'), 'utf8');
    const m = /listening on http:\/\/[^:]+:(\d+)/.exec(text);
    if (m) return { proc: p, url: 'http://127.0.0.1:' + m[1], stop: () => p.kill('SIGTERM') };
    if (p.exitCode !== null) throw new Error('gpufl-server exited: ' + text);
    if (Date.now() - t0 > 15000) throw new Error('gpufl-server did not start: ' + text);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function req(url, method, pth, body, ctype = 'application/x-ndjson', token = ADMIN) {
  const r = await fetch(url + pth, {
    method,
    headers: { Authorization: 'Bearer ' + token, ...(body ? { 'Content-Type': ctype } : {}) },
    body,
  });
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) };
}

/* Runs example_train (simulated GPU) into logDir; speed 1 keeps the GPU
   samples (real clock) spread over the simulated kernels' span. */
export function runTrain(bin, logDir, steps, extraEnv = {}, speed = 1) {
  fs.mkdirSync(logDir, { recursive: true });
  const r = spawnSync(
    path.join(bin, 'example_train'),
    ['--steps', String(steps), '--speed', String(speed), '--log-dir', logDir, '--engines', 'sim,host'],
    { env: { ...process.env, ...extraEnv }, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error('example_train failed: ' + r.stderr);
}

/* POSTs every log file of logDir to /api/v1/events/<stream>, in batches. */
/* hold(line, stream) true: not sent; returned in held[stream] (to send
   later, e.g. session_end lines so the session stays "running"). */
export async function ingestDir(url, logDir, hold = null, held = {}) {
  let lines = 0;
  for (const f of fs.readdirSync(logDir).sort()) {
    const m = /\.(device|scope|system)\.log$/.exec(f);
    if (!m) continue;
    let all = fs.readFileSync(path.join(logDir, f), 'utf8').split('\n').filter(Boolean);
    if (hold) {
      held[m[1]] = (held[m[1]] ?? []).concat(all.filter((l) => hold(l, m[1])));
      all = all.filter((l) => !hold(l, m[1]));
    }
    for (let i = 0; i < all.length; i += 50000) {
      const r = await req(url, 'POST', '/api/v1/events/' + m[1], all.slice(i, i + 50000).join('\n') + '\n');
      if (r.status !== 200) throw new Error('ingest ' + f + ': ' + r.status + ' ' + r.text);
      const j = r.json();
      if (j.rejected) throw new Error('ingest ' + f + ' rejected lines: ' + r.text);
      lines += j.accepted + j.duplicate;
    }
  }
  return lines;
}

export function sessionOf(logDir) {
  const f = fs.readdirSync(logDir).find((x) => x.endsWith('.device.log'));
  const first = fs.readFileSync(path.join(logDir, f), 'utf8').split('\n', 1)[0];
  return JSON.parse(first);
}
