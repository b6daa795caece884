// api.ts - the gpufl-server query API, as the UI uses it.
//
// Integers of 16 digits or more (epoch-ns times) arrive as strings: JSON.parse
// would round them through doubles (docs/api.md: "64-bit integers are written
// exactly").  Use big() / rel() to work with them.

export type Int = number | string;

export class ApiError extends Error {
  status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const TOKEN_KEY = 'gpufl.token';

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/* Quotes every integer literal of 16+ digits outside strings. */
export function quoteBigInts(text: string): string {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if ((c >= '0' && c <= '9') || c === '-') {
      let j = i + 1;
      while (j < n && /[0-9.eE+-]/.test(text[j])) j++;
      const num = text.slice(i, j);
      out += /^-?\d{16,}$/.test(num) ? '"' + num + '"' : num;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

export function parseJson(text: string): unknown {
  return JSON.parse(quoteBigInts(text));
}

export function big(v: Int | null | undefined): bigint {
  if (v === null || v === undefined || v === '') return 0n;
  return typeof v === 'string' ? BigInt(v) : BigInt(Math.trunc(v));
}

/* ns offset of v from base as a Number (exact below 2^53 ns = 104 days). */
export function rel(v: Int, base: bigint): number {
  return Number(big(v) - base);
}

type Fetcher = (input: string, init?: RequestInit) => Promise<Response>;
let fetcher: Fetcher = (i, init) => fetch(i, init);
export function setFetcher(f: Fetcher): void {
  fetcher = f;
}

export const inflight = { n: 0 };

/* GET /api/v1/path?params as T, the answer's type (lib/types.ts): the
   caller names what it expects; nothing checks it at run time. */
export async function api<T>(
  path: string,
  params?: Record<string, Int | boolean | undefined | null>,
  signal?: AbortSignal,
): Promise<T> {
  const q = new URLSearchParams();
  if (params)
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const url = '/api/v1/' + path + (q.toString() ? '?' + q.toString() : '');
  const token = getToken();
  inflight.n++;
  try {
    let r: Response;
    try {
      r = await fetcher(url, { headers: token ? { Authorization: 'Bearer ' + token } : {}, signal });
    } catch (e) {
      if (e instanceof Error && e.name === 'AbortError') throw e;
      throw new ApiError(
        0,
        'cannot reach gpufl-server (' + (e instanceof Error ? e.message : String(e)) + '): is it running?',
      );
    }
    const text = await r.text();
    if (!r.ok) {
      if (r.status === 401 && typeof window !== 'undefined' && getToken())
        window.dispatchEvent(
          new CustomEvent('gpufl-unauthorized', { detail: 'The server refused the token (401). Sign in again.' }),
        );
      let msg = text;
      try {
        msg = JSON.parse(text).error || text;
      } catch {
        /* not JSON */
      }
      throw new ApiError(r.status, msg || r.statusText);
    }
    return parseJson(text) as T;
  } finally {
    inflight.n--;
  }
}

/* All pages of a list endpoint, up to max items. */
export async function apiAll<T>(
  path: string,
  params: Record<string, Int | boolean | undefined | null>,
  max: number,
  signal?: AbortSignal,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page: { items: T[]; next: string | null } = await api(
      path,
      { ...params, limit: Math.min(1000, max - items.length), cursor },
      signal,
    );
    items.push(...page.items);
    cursor = page.next;
    if (!cursor) return { items, more: false };
    if (items.length >= max) return { items, more: true };
  }
}

export function explain(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 401)
      return (
        'The server refused the token (401): ' + e.message + '. Sign in again with a valid API key or the admin token.'
      );
    if (e.status === 403)
      return 'This token may not read this data (403): ' + e.message + '. Use a key with the read or admin role.';
    if (e.status === 404) return 'Not found (404): ' + e.message + '.';
    if (e.status === 503) return 'The database is busy or unavailable (503): ' + e.message + '. Retry in a moment.';
    return (e.status ? 'HTTP ' + e.status + ': ' : '') + e.message;
  }
  return String(e instanceof Error ? e.message : e);
}
