import { startTransition, useEffect, useRef, useState } from 'react';
import { api, explain, Int } from '../lib/api';
import { whenStill } from '../lib/motion';

export function Badge({ kind, children }: { kind: string; children: React.ReactNode }) {
  return (
    <span
      className={'badge b-' + kind.toLowerCase().replace(/[^a-z_]/g, '')}
      data-testid={'badge-' + kind.toLowerCase()}
    >
      {children}
    </span>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <div className="loading" data-testid="loading">
      Loading {what}…
    </div>
  );
}

export function Empty({ children }: { children: React.ReactNode }) {
  return (
    <div className="empty" data-testid="empty">
      {children}
    </div>
  );
}

export function ErrorBox({ error, what }: { error: unknown; what: string }) {
  return (
    <div className="error" data-testid="error" role="alert">
      Error while {what}: {explain(error)}
    </div>
  );
}

export interface Fetched<T> {
  data: T | null;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/* GET path?params when any dep changes (the previous request is aborted).
   Its states are transitions: React renders what they change (a table of
   hundreds of rows under the timeline) in slices it interrupts for a
   frame, so an answer arriving while the user pans or zooms the timeline
   does not hold its frames back (bench/web: one such render was a 50-110
   ms task).  still: the answer waits until the timeline has been still
   for a moment (lib/motion.ts) - for what is drawn under it, whose layout
   and paint React cannot slice. */
export function useApi<T>(
  path: string | null,
  params: Record<string, Int | boolean | undefined | null>,
  deps: unknown[],
  opts: { still?: boolean } = {},
): Fetched<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const [n, setN] = useState(0);
  const first = useRef(true);
  useEffect(() => {
    if (!path) return;
    const ac = new AbortController();
    const clear = first.current;
    first.current = false;
    startTransition(() => {
      setLoading(true);
      if (clear) setData(null);
    });
    api<T>(path, params, ac.signal)
      .then(async (d) => {
        if (opts.still) await whenStill(ac.signal);
        if (ac.signal.aborted) return;
        startTransition(() => {
          setData(d);
          setError(null);
          setLoading(false);
        });
      })
      .catch((e) => {
        if (ac.signal.aborted) return;
        // what was shown answered an earlier question: never leave it
        // under the error banner as if it answered this one
        startTransition(() => {
          setData(null);
          setError(e);
          setLoading(false);
        });
      });
    return () => ac.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- params is a new object every render: the caller lists in deps what it is made of
  }, [path, n, ...deps]);
  return { data, error, loading, reload: () => setN((x) => x + 1) };
}

/* A sortable header cell for tables sorted in the view. */
export function Th({
  k,
  sort,
  setSort,
  children,
  num,
}: {
  k: string;
  sort: [string, boolean];
  setSort: (s: [string, boolean]) => void;
  children: React.ReactNode;
  num?: boolean;
}) {
  const on = sort[0] === k;
  return (
    <th
      className={(num ? 'num ' : '') + 'sortable' + (on ? ' on' : '')}
      onClick={() => setSort([k, on ? !sort[1] : true])}
      data-testid={'th-' + k}
    >
      {children}
      {on ? (sort[1] ? ' ▼' : ' ▲') : ''}
    </th>
  );
}

export function sortRows<T>(rows: T[], key: string, desc: boolean, get: (r: T, k: string) => number | string): T[] {
  const out = rows.slice();
  out.sort((a, b) => {
    const x = get(a, key);
    const y = get(b, key);
    const c = x < y ? -1 : x > y ? 1 : 0;
    return desc ? -c : c;
  });
  return out;
}
