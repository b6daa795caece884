// Captures.tsx - capture requests from the UI (docs/ui.md "Capture
// requests"): a button that asks a host's agent to trace a running
// process for 30 s or to dump the flight-recorder windows of its
// processes, following the request until it is answered; and the list of
// recent requests.
import { useEffect, useState } from 'react';
import { api, ApiError, apiPost, explain } from '../lib/api';
import { captureActive, captureBody, captureStatus, captureWhat } from '../lib/capture';
import type { CaptureRequest, Page } from '../lib/types';
import { fmtWall } from '../lib/format';
import { Badge, useApi } from './common';

function why(e: unknown): string {
  if (e instanceof ApiError && e.status === 403)
    return 'capture requests need a token with the admin role (403): ' + e.message;
  return explain(e);
}

/* Polls one request every second while it waits. */
function useFollow(first: CaptureRequest | null): [CaptureRequest | null, unknown] {
  const [req, setReq] = useState<CaptureRequest | null>(first);
  const [err, setErr] = useState<unknown>(null);
  if (first && (!req || first.id !== req.id)) setReq(first);
  useEffect(() => {
    if (!req || !captureActive(req)) return;
    const t = setTimeout(() => {
      api<CaptureRequest>('captures/' + req.id)
        .then((r) => {
          setReq(r);
          setErr(null);
        })
        .catch(setErr);
    }, 1000);
    return () => clearTimeout(t);
  }, [req]);
  return [req, err];
}

export function CaptureButton({
  host,
  pid,
  action,
  label,
  title,
}: {
  host: string;
  pid: number | null;
  action: 'dump' | 'trace';
  label: string;
  title: string;
}) {
  const [made, setMade] = useState<CaptureRequest | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [req, followErr] = useFollow(made);
  const go = () => {
    setBusy(true);
    setErr(null);
    apiPost<CaptureRequest>('hosts/' + encodeURIComponent(host) + '/captures', captureBody(action, pid))
      .then(setMade)
      .catch(setErr)
      .finally(() => setBusy(false));
  };
  const e = err ?? followErr;
  return (
    <span className="capture" data-testid="capture">
      <button
        data-testid={'capture-' + action}
        disabled={busy || (req !== null && captureActive(req))}
        onClick={go}
        title={title}
      >
        {label}
      </button>
      {req && (
        <span data-testid="capture-state" data-state={req.state} className="dim">
          {' '}
          {captureStatus(req)}
        </span>
      )}
      {e ? (
        <span className="cap-error" data-testid="capture-error" role="alert">
          {' '}
          {why(e)}
        </span>
      ) : null}
    </span>
  );
}

/* The newest requests, refreshed every 3 s while one of them waits. */
export function CaptureList() {
  const [tick, setTick] = useState(0);
  const r = useApi<Page<CaptureRequest>>('captures', { limit: 20 }, [tick]);
  const items = r.data?.items ?? [];
  const waiting = items.some(captureActive);
  useEffect(() => {
    const t = setInterval(() => setTick((x) => x + 1), waiting ? 3000 : 15000);
    return () => clearInterval(t);
  }, [waiting]);
  if (!items.length) return null;
  return (
    <section className="captures" data-testid="capture-list">
      <h3>Capture requests</h3>
      <table className="grid">
        <thead>
          <tr>
            <th>#</th>
            <th>host</th>
            <th>asked</th>
            <th>state</th>
            <th>when</th>
          </tr>
        </thead>
        <tbody>
          {items.map((c) => (
            <tr key={c.id} data-testid="capture-row" data-state={c.state}>
              <td>{c.id}</td>
              <td>{c.host}</td>
              <td>{captureWhat(c)}</td>
              <td title={(c.processes ?? []).map((p) => 'pid ' + p.pid + ': ' + (p.ok ? 'ok' : p.error)).join('\n')}>
                <Badge kind={'cap-' + c.state}>{c.state}</Badge> {c.reason ?? ''}
              </td>
              <td>{fmtWall(BigInt(c.created) * 1000000000n)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
