// capture.ts - capture requests as the UI shows them (docs/api.md
// "Capture requests", docs/ui.md "Capture requests"): the body a button
// POSTs, and one line saying where a request stands.
import type { CaptureRequest } from './types';

/* The body of POST /hosts/{host}/captures: a timed trace of one process
   (pid) or a dump of the flight-recorder window of one or, pid null,
   every gpufl process of the host. */
export function captureBody(action: 'dump' | 'trace', pid: number | null, seconds?: number): Record<string, unknown> {
  const b: Record<string, unknown> = { action, note: 'web UI' };
  if (pid !== null) b.pid = pid;
  if (action === 'trace') b.for = (seconds ?? 30) + 's';
  return b;
}

/* Still waiting: for the agent to pick it up, or to report. */
export function captureActive(r: CaptureRequest): boolean {
  return r.state === 'pending' || r.state === 'delivered';
}

/* "waiting for the agent of node-7", "done: 1 of 1 processes: ok", ... */
export function captureStatus(r: CaptureRequest): string {
  switch (r.state) {
    case 'pending':
      return 'waiting for the agent of ' + r.host;
    case 'delivered':
      return 'forwarded by the agent, waiting for its answer';
    case 'done':
    case 'failed':
    case 'expired':
      return r.state + (r.reason ? ': ' + r.reason : '');
  }
  return r.state;
}

/* What was asked, e.g. "trace 30 s, pid 4242" or "dump, every process". */
export function captureWhat(r: CaptureRequest): string {
  const what = r.action === 'trace' ? 'trace ' + Math.round((r.for_ms ?? 0) / 1000) + ' s' : 'dump';
  return what + ', ' + (r.pid === null ? 'every process' : 'pid ' + r.pid);
}
