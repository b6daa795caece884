// url.ts - the view's state in the URL hash, so a view can be shared as a link:
//   #/<tab>?s=<sid>&b=<sid2>&from=<ns>&to=<ns>&sel=<id>&q=<text>&mv=<memview>
//          &oom=<OOM report id>&job=<job id>&app=<app>&kind=<finding kind>
// Times are absolute epoch ns, kept as decimal strings (never Numbers).

export const TABS = ['sessions', 'kernels', 'scopes', 'system', 'memory', 'jobs', 'regressions', 'fleet'] as const;
export type Tab = (typeof TABS)[number];

export interface UrlState {
  tab: Tab;
  s?: string; // session id
  b?: string; // second session (compare)
  from?: string; // zoom range, epoch ns
  to?: string;
  sel?: string; // selection: kernel id, scope path, frame path
  q?: string; // search text
  mv?: string; // memory view: alloc|inuse|fail, + ":self"
  oom?: string; // memory view: the OOM report shown
  job?: string; // jobs view: the job shown
  app?: string; // regressions view: the app filter
  kind?: string; // regressions view: the kind filter
}

const KEYS = ['s', 'b', 'from', 'to', 'sel', 'q', 'mv', 'oom', 'job', 'app', 'kind'] as const;
const NS = /^\d{1,20}$/;

export function parseHash(hash: string): UrlState {
  const h = hash.replace(/^#/, '');
  const qi = h.indexOf('?');
  const path = (qi >= 0 ? h.slice(0, qi) : h).replace(/^\/+/, '');
  const tab = (TABS as readonly string[]).includes(path) ? (path as Tab) : 'sessions';
  const st: UrlState = { tab };
  const p = new URLSearchParams(qi >= 0 ? h.slice(qi + 1) : '');
  for (const k of KEYS) {
    const v = p.get(k);
    if (v !== null && v !== '') st[k] = v;
  }
  // a zoom range must be two integers with from < to; otherwise ignore both
  if (!(st.from && st.to && NS.test(st.from) && NS.test(st.to) && BigInt(st.from) < BigInt(st.to))) {
    delete st.from;
    delete st.to;
  }
  return st;
}

export function formatHash(st: UrlState): string {
  const p = new URLSearchParams();
  for (const k of KEYS) {
    const v = st[k];
    if (v !== undefined && v !== '') p.set(k, v);
  }
  const qs = p.toString();
  return '#/' + st.tab + (qs ? '?' + qs : '');
}

/* The state after moving to another tab: keep the session and zoom, drop
   the selection and the other tabs' filters (they name something of the
   old tab). */
export function switchTab(st: UrlState, tab: Tab): UrlState {
  const n: UrlState = { ...st, tab };
  delete n.sel;
  delete n.q;
  delete n.oom;
  delete n.job;
  delete n.app;
  delete n.kind;
  return n;
}
