// api.ts - the gpufl-server query API, as the UI uses it.
//
// The API writes what JSON.parse would round (docs/api.md "Numbers") as
// strings of decimal digits: every ns time and duration, byte count and
// instruction count is a Dec, always; other integers are numbers (an Int:
// a decimal string only past 2^53 - 1, which real data never reaches).
// Use big() / rel() for epoch-ns times, num() for a duration or a size
// to show.

/* A decimal-string integer of the API: ns, bytes, instruction counts. */
export type Dec = string;
/* A number, or a decimal string past 2^53 - 1. */
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

export function big(v: Dec | Int | null | undefined): bigint {
  if (v === null || v === undefined || v === '') return 0n;
  return typeof v === 'string' ? BigInt(v) : BigInt(Math.trunc(v));
}

/* ns offset of v from base as a Number (exact below 2^53 ns = 104 days). */
export function rel(v: Dec | Int, base: bigint): number {
  return Number(big(v) - base);
}

/* A duration, size or count as a Number to show or compute with (exact
 * below 2^53: 104 days of ns, 8 PiB); 0 for none. */
export function num(v: Dec | Int | null | undefined): number {
  return v === null || v === undefined || v === '' ? 0 : Number(v);
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
  return request<T>('GET', path, params, undefined, signal);
}

/* POST /api/v1/path with a JSON body, the answer as T (the same errors). */
export async function apiPost<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  return request<T>('POST', path, undefined, body, signal);
}

async function request<T>(
  method: string,
  path: string,
  params: Record<string, Int | boolean | undefined | null> | undefined,
  body: unknown,
  signal?: AbortSignal,
): Promise<T> {
  const q = new URLSearchParams();
  if (params)
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const url = '/api/v1/' + path + (q.toString() ? '?' + q.toString() : '');
  const token = getToken();
  const headers: Record<string, string> = token ? { Authorization: 'Bearer ' + token } : {};
  const init: RequestInit = { headers, signal };
  if (method !== 'GET') {
    init.method = method;
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  inflight.n++;
  try {
    let r: Response;
    try {
      r = await fetcher(url, init);
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
    return JSON.parse(text) as T;
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
