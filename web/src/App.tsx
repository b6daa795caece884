import { useEffect, useState } from 'react';
import { api, ApiError, explain, getToken, setToken } from './lib/api';
import { fmtNs, fmtWall } from './lib/format';
import { switchTab, Tab, TABS, UrlState } from './lib/url';
import { useUrlState } from './state';
import { Sessions } from './views/Sessions';
import { Kernels } from './views/Kernels';
import { Scopes } from './views/Scopes';
import { SystemView } from './views/System';
import { Memory } from './views/Memory';
import { Fleet } from './views/Fleet';
import { Jobs } from './views/Jobs';
import { Regressions, SessionRegs } from './views/Regressions';
import { jobLabel } from './lib/jobs';
import { formatHash } from './lib/url';
import { Badge, ErrorBox, Loading } from './views/common';
import { gapsText } from './lib/gaps';
import { dumpBadge, firingText } from './lib/dumps';
import type { Page, Session } from './lib/types';

export interface ViewProps {
  st: UrlState;
  set: (n: UrlState, replace?: boolean) => void;
  session: Session | null;
}

function SignIn({ why, onToken }: { why: string | null; onToken: (t: string) => void }) {
  const [tok, setTok] = useState('');
  const [err, setErr] = useState<string | null>(why);
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    setToken(tok.trim());
    try {
      await api<Page<Session>>('sessions', { limit: 1 });
      onToken(tok.trim());
    } catch (x) {
      setToken(null);
      setErr(
        x instanceof ApiError && x.status === 401
          ? 'Sign-in failed: the server does not accept this token (401). Check the key or the admin token.'
          : explain(x),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="signin" data-testid="signin">
      <form onSubmit={submit}>
        <h1>gpufl</h1>
        <p>
          Sign in with an API key (role <code>read</code> or <code>admin</code>) or the server&apos;s admin token. It is
          kept in this tab only (sessionStorage) and sent as <code>Authorization: Bearer</code>.
        </p>
        <input
          data-testid="token"
          type="password"
          autoFocus
          placeholder="API key or admin token"
          value={tok}
          onChange={(e) => setTok(e.target.value)}
        />
        <button data-testid="signin-submit" type="submit" disabled={busy || !tok.trim()}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        {err && (
          <div className="error" data-testid="signin-error">
            {err}
          </div>
        )}
      </form>
    </div>
  );
}

const SESSION_REFRESH_MS = 5000;

const TAB_LABEL: Record<Tab, string> = {
  sessions: 'Sessions',
  kernels: 'Kernels',
  scopes: 'Scopes',
  system: 'System',
  memory: 'Memory',
  jobs: 'Jobs',
  regressions: 'Regressions',
  fleet: 'Fleet',
};
const NEEDS_SESSION: Tab[] = ['kernels', 'scopes', 'system', 'memory'];

export function App() {
  const [token, setTok] = useState<string | null>(getToken());
  const [why, setWhy] = useState<string | null>(null);
  const [st, set] = useUrlState();
  const [session, setSession] = useState<Session | null>(null);
  const [sErr, setSErr] = useState<unknown>(null);

  useEffect(() => {
    const on = (e: Event) => {
      setToken(null);
      setTok(null);
      setWhy((e as CustomEvent).detail || 'Your token was refused (401). Sign in again.');
    };
    window.addEventListener('gpufl-unauthorized', on);
    return () => window.removeEventListener('gpufl-unauthorized', on);
  }, []);

  useEffect(() => {
    setSession(null);
    setSErr(null);
    if (!token || !st.s) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = (first: boolean) =>
      api<Session>('sessions/' + encodeURIComponent(st.s!))
        .then((s) => {
          if (!live) return;
          setSession(s);
          /* a running session's header (state, span, counts, missing
             lines) follows it until it ends */
          if (s.state === 'running') timer = setTimeout(() => load(false), SESSION_REFRESH_MS);
        })
        .catch((e) => {
          if (!live) return;
          if (first) setSErr(e);
          else timer = setTimeout(() => load(false), SESSION_REFRESH_MS);
        });
    load(true);
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [token, st.s]);

  if (!token)
    return (
      <SignIn
        why={why}
        onToken={(t) => {
          setTok(t);
          setWhy(null);
        }}
      />
    );

  const props: ViewProps = { st, set, session };
  let body: React.ReactNode;
  if (NEEDS_SESSION.includes(st.tab) && !st.s) {
    body = (
      <div className="empty" data-testid="need-session">
        No session selected. Pick one on the <a href="#/sessions">Sessions</a> tab (click its name), then come back to{' '}
        {TAB_LABEL[st.tab]}.
      </div>
    );
  } else if (NEEDS_SESSION.includes(st.tab) && sErr) {
    body = <ErrorBox error={sErr} what={'loading session ' + st.s} />;
  } else if (NEEDS_SESSION.includes(st.tab) && !session) {
    body = <Loading what="session" />;
  } else if (st.tab === 'sessions') body = <Sessions {...props} />;
  else if (st.tab === 'kernels') body = <Kernels key={st.s} {...props} />;
  else if (st.tab === 'scopes') body = <Scopes key={st.s} {...props} />;
  else if (st.tab === 'system') body = <SystemView key={st.s} {...props} />;
  else if (st.tab === 'memory') body = <Memory key={st.s} {...props} />;
  else if (st.tab === 'jobs') body = <Jobs {...props} />;
  else if (st.tab === 'regressions') body = <Regressions {...props} />;
  else body = <Fleet {...props} />;

  return (
    <div className="app">
      <header>
        <span className="brand">gpufl</span>
        <nav>
          {TABS.map((t) => (
            <a
              key={t}
              data-testid={'tab-' + t}
              className={st.tab === t ? 'on' : ''}
              href={'#' + '/' + t}
              onClick={(e) => {
                e.preventDefault();
                set(switchTab(st, t));
              }}
            >
              {TAB_LABEL[t]}
            </a>
          ))}
        </nav>
        <span className="grow" />
        <button
          className="link"
          data-testid="signout"
          onClick={() => {
            setToken(null);
            setTok(null);
          }}
        >
          Sign out
        </button>
      </header>
      {session && st.s && NEEDS_SESSION.includes(st.tab) && (
        <div className="sessline" data-testid="session-line">
          <b>{session.app}</b> on <b>{session.host}</b> · pid {session.pid} ·{' '}
          <Badge kind={session.state}>{session.state}</Badge>
          {session.simulated && <Badge kind="simulated">simulated</Badge>}
          {session.job !== undefined && (
            <a className="badge b-job" data-testid="session-job" href={formatHash({ tab: 'jobs', job: session.job })}>
              {jobLabel(session)}
            </a>
          )}
          {(() => {
            const d = dumpBadge(session);
            const fs = session.triggers ?? [];
            return d ? (
              <>
                <span className="badge b-dump" data-testid="session-dump" title={d.title}>
                  {d.short}
                </span>
                {fs.length > 0 && (
                  <span className="dim" data-testid="session-triggers">
                    {' '}
                    fired: {fs.slice(0, 4).map(firingText).join('; ')}
                    {fs.length > 4 || session.triggers_cut ? '; …' : ''}
                  </span>
                )}
              </>
            ) : null;
          })()}
          {(() => {
            const g = gapsText(session);
            return g ? (
              <span className="badge b-missing" data-testid="session-missing" title={g.detail}>
                ⚠ {g.short}
              </span>
            ) : null;
          })()}
          <span className="dim">
            {' '}
            · started {fmtWall(session.start_ns)} · span{' '}
            {fmtNs(Number(BigInt(session.last_ts) - BigInt(session.first_ts)))} · {session.counts.kernels} kernels
            ·{' '}
          </span>
          <code className="dim">{session.id}</code>
          <SessionRegs key={session.id} session={session} />
        </div>
      )}
      <main>{body}</main>
    </div>
  );
}
