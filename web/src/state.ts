// state.ts - the URL-hash state as a React hook, and the test hooks the
// browser tests read (window.__uiTest).
import { useEffect, useState, useCallback } from 'react';
import { formatHash, parseHash, UrlState } from './lib/url';
import { inflight } from './lib/api';

export function useUrlState(): [UrlState, (n: UrlState, replace?: boolean) => void] {
  const [st, setSt] = useState<UrlState>(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setSt(parseHash(location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  const set = useCallback((n: UrlState, replace = false) => {
    const h = formatHash(n);
    if (h === location.hash) return;
    if (replace) history.replaceState(null, '', h);
    else history.pushState(null, '', h);
    setSt(parseHash(h));
  }, []);
  return [st, set];
}

export interface UiTest {
  idle: () => boolean;
  busy: number; // views' pending work besides fetches
  timeline?: { t0: number; t1: number; base: string; rects: number; labels: number; mode: string; ms: number; frames: number[] };
  flame?: { total: number; rects: number; focus: string; view: string };
  [k: string]: unknown;
}

declare global {
  interface Window {
    __uiTest: UiTest;
  }
}

window.__uiTest = {
  busy: 0,
  idle: () => inflight.n === 0 && window.__uiTest.busy === 0,
};
