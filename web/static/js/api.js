// API access: every request goes to the controller that served this page
// (same origin, so no CORS is needed) with the token the user entered.
import {reportFailure} from './conn.js';

const TOKEN_KEY = 'corral.token';

// The token lives in sessionStorage: it survives reloads of this tab but
// is never written to disk or shared with other tabs.
export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// Every request carries X-Corral-Client: the API refuses state-changing
// requests without it (or a JSON body), which a foreign page cannot send
// without a CORS preflight (docs/API.md, "Browser safety").
export function authHeaders(extra) {
  const hdr = {'X-Corral-Client': 'dashboard', ...(extra || {})};
  const t = getToken();
  if (t) hdr.Authorization = `Bearer ${t}`;
  return hdr;
}

// APIError carries the API's JSON error body: its text says what to do.
export class APIError extends Error {
  constructor(status, body, path) {
    const text = body && body.error ? body.error : `HTTP ${status} from ${path}`;
    super(text);
    this.status = status;
    this.code = (body && body.code) || '';
    this.fields = (body && body.fields) || [];
    this.body = body;
  }

  // describe is the message shown next to a failed action.
  describe() {
    const hint = this.code === 'unauthorized' ? ' Enter the API token at the top of the page.' : '';
    return `${this.message}${this.code ? ` (${this.code}, HTTP ${this.status})` : ''}${hint}`;
  }
}

// NetworkError: the controller did not answer at all.
export class NetworkError extends Error {
  describe() {
    return `${this.message}: the controller did not answer.`;
  }
}

export function describe(err) {
  return err && typeof err.describe === 'function' ? err.describe() : String(err && err.message ? err.message : err);
}

// The caller's token as the API sees it (GET /v1/acl/token/self): the
// pages disable the actions it cannot take. null until loaded, or when it
// could not be read; the server checks every request either way.
let self = null;

// loadSelf asks who the token is; app.js calls it before each page.
export async function loadSelf() {
  try {
    self = await get('/v1/acl/token/self');
  } catch {
    self = null;
  }
  return self;
}

// whoami is the loaded identity (null when unknown).
export const whoami = () => self;

function grants(access, r) {
  return r.access === 'write' || access === 'read';
}

// can reports whether the token may take access ("read" or "write") on
// resource ("kv", "coord", "jobs", "workers", "operator") for name; with
// name undefined, for some name. It mirrors metadata.ACLIdentity.Allows.
export function can(resource, access, name) {
  if (!self || !self.acl_enabled || self.type === 'management') return true;
  return (self.rules || []).some((r) => r.resource === resource && grants(access, r) &&
    (name === undefined || String(name).startsWith(r.prefix || '')));
}

// gate disables button when the token lacks the permission, and says why.
export function gate(button, resource, access, name) {
  if (can(resource, access, name)) return button;
  button.disabled = true;
  button.title = `Your token lacks ${resource}:${access}${name ? ` on "${name}"` : ''}.`;
  button.classList.add('denied');
  return button;
}

// api sends one request. body (an object) is sent as JSON, or as is when it
// is a string. opts.text returns the body as text; opts.raw the Response.
export async function api(method, path, body, opts = {}) {
  const headers = authHeaders();
  let payload;
  if (body !== undefined && body !== null) {
    payload = typeof body === 'string' ? body : JSON.stringify(body);
    headers['Content-Type'] = opts.contentType || 'application/json';
  }
  const timeout = AbortSignal.timeout(opts.timeout || 15000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  let res;
  try {
    res = await fetch(path, {method, headers, body: payload, signal, cache: 'no-store'});
  } catch (e) {
    if (opts.signal && opts.signal.aborted) throw e;
    // A refused connection means this controller may be gone: let the
    // connection monitor look for another one.
    if (e instanceof TypeError) reportFailure();
    throw new NetworkError(`${method} ${path} failed (${e.name === 'TimeoutError' ? 'timed out' : e.message})`);
  }
  if (opts.raw) return res;
  if (!res.ok) {
    let b = null;
    try {
      b = await res.json();
    } catch {
      // not JSON: the status says enough
    }
    throw new APIError(res.status, b, path);
  }
  if (opts.text) return res.text();
  return res.json();
}

export const get = (path, opts) => api('GET', path, null, opts);
export const post = (path, body, opts) => api('POST', path, body === undefined ? {} : body, opts);
export const del = (path, opts) => api('DELETE', path, null, opts);

// enc escapes one path segment (names and ids are user input).
export const enc = encodeURIComponent;

// keyPath escapes a key for /v1/kv/{key...}: its slashes stay slashes.
export function keyPath(k) {
  return k.split('/').map(encodeURIComponent).join('/');
}

// optional runs a GET for an API that may not exist on this server yet
// (the jobs routes): it resolves null when the route is unknown.
export async function optional(path, opts) {
  try {
    return await get(path, opts);
  } catch (e) {
    if (e instanceof APIError && e.status === 404 && /no route/.test(e.message)) return null;
    throw e;
  }
}
