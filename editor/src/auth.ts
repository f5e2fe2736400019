// Signing in to a server started with --token. The token is sent as
// "Authorization: Bearer <token>" on every API request and, since a browser
// cannot set headers on a WebSocket, as its subprotocol
// "bearer.<base64url(token)>" next to "ruleagent".
//
// It is kept in memory and in sessionStorage: the tab keeps it across
// reloads and forgets it when it closes. Not in localStorage, where it would
// outlive the session on disk and be shared by every tab of the origin; and
// never in a URL, which ends up in the history, server and proxy logs and
// Referer headers.

export type AuthState = 'unknown' | 'ok' | 'needed';

const KEY = 'ruleagent.token';

export class Auth {
  private value: string;
  private current: AuthState = 'unknown';
  private listeners = new Set<() => void>();

  constructor(private store: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> | null) {
    this.value = store?.getItem(KEY) ?? '';
  }

  token(): string {
    return this.value;
  }

  // state is 'needed' once the server refused a request (401) and until a
  // token is given; 'ok' once it answered one.
  state(): AuthState {
    return this.current;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.value ? { ...extra, Authorization: `Bearer ${this.value}` } : extra;
  }

  // protocols are the WebSocket subprotocols that carry the token; none
  // without one (a server that does not answer a requested subprotocol
  // fails the handshake).
  protocols(): string[] {
    return this.value ? ['ruleagent', `bearer.${base64url(this.value)}`] : [];
  }

  signIn(token: string) {
    this.value = token.trim();
    this.store?.setItem(KEY, this.value);
    this.set('unknown');
  }

  signOut() {
    this.value = '';
    this.store?.removeItem(KEY);
    this.set('needed');
  }

  // saw records the status of an API answer.
  saw(status: number) {
    if (status === 401) this.set('needed');
    else if (status < 500) this.set('ok');
  }

  subscribe(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private set(s: AuthState) {
    const changed = s !== this.current;
    this.current = s;
    // signIn notifies even when the state stays: the token changed.
    if (changed || s === 'unknown') for (const f of [...this.listeners]) f();
  }
}

// base64url is RFC 4648 §5 base64url of the text's UTF-8 bytes, without
// padding: what a WebSocket subprotocol token may hold.
export function base64url(text: string): string {
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// dropURLToken removes a ?token= the address may carry (older versions
// of the editor were opened that way) without using it, and says whether
// there was one.
export function dropURLToken(loc: Location, hist: History): boolean {
  const params = new URLSearchParams(loc.search);
  if (!params.has('token')) return false;
  params.delete('token');
  const rest = params.toString();
  hist.replaceState(null, '', loc.pathname + (rest ? `?${rest}` : '') + loc.hash);
  return true;
}

export const auth = new Auth(typeof sessionStorage === 'undefined' ? null : sessionStorage);
