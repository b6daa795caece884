// state.ts - the URL-hash state as a React hook.
import { useEffect, useState, useCallback } from 'react';
import { formatHash, parseHash, UrlState } from './lib/url';

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
