import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, APIError } from './api';
import { Auth, auth, base64url, dropURLToken } from './auth';

class MemoryStorage {
  m = new Map<string, string>();
  getItem(k: string) {
    return this.m.get(k) ?? null;
  }
  setItem(k: string, v: string) {
    this.m.set(k, v);
  }
  removeItem(k: string) {
    this.m.delete(k);
  }
}

function decode(b64url: string): string {
  const b64 = b64url.replace(/-/g, '+').replace(/_/g, '/');
  return new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
}

describe('the token', () => {
  it('is sent as the bearer header and the WebSocket subprotocol, and kept in the session store', () => {
    const store = new MemoryStorage();
    const a = new Auth(store);
    expect(a.headers({ Accept: 'x' })).toEqual({ Accept: 'x' });
    expect(a.protocols()).toEqual([]);
    a.signIn('  s3cr+t/é?>  ');
    expect(a.headers()).toEqual({ Authorization: 'Bearer s3cr+t/é?>' });
    const [name, bearer] = a.protocols();
    expect(name).toBe('ruleagent');
    // A subprotocol is an HTTP token: base64url without padding.
    expect(bearer).toMatch(/^bearer\.[A-Za-z0-9_-]+$/);
    expect(decode(bearer.slice('bearer.'.length))).toBe('s3cr+t/é?>');
    expect(store.getItem('ruleagent.token')).toBe('s3cr+t/é?>');
    // A new page of the same tab finds it; signing out forgets it.
    expect(new Auth(store).token()).toBe('s3cr+t/é?>');
    a.signOut();
    expect(store.getItem('ruleagent.token')).toBeNull();
    expect(a.state()).toBe('needed');
  });

  it('base64url has no padding and no + or /', () => {
    expect(base64url('a')).toBe('YQ');
    expect(base64url('\u00fb\u00ff')).toBe('w7vDvw');
    expect(base64url('>>?')).toBe('Pj4_');
  });

  it('tells listeners when the server refuses a request, and when it answers again', () => {
    const a = new Auth(null);
    const seen: string[] = [];
    a.subscribe(() => seen.push(a.state()));
    a.saw(200);
    a.saw(200);
    a.saw(401);
    a.signIn('t');
    a.saw(404);
    expect(seen).toEqual(['ok', 'needed', 'unknown', 'ok']);
  });

  it('drops a token from the address without using it', () => {
    const replace = vi.fn();
    const loc = { search: '?token=abc&x=1', pathname: '/', hash: '#h' } as Location;
    expect(dropURLToken(loc, { replaceState: replace } as unknown as History)).toBe(true);
    expect(replace).toHaveBeenCalledWith(null, '', '/?x=1#h');
    expect(dropURLToken({ search: '', pathname: '/', hash: '' } as Location, { replaceState: replace } as unknown as History)).toBe(false);
  });
});

describe('the API client', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    auth.signOut();
  });

  it('sends the token on every request, and a 401 asks for one', async () => {
    const calls: RequestInit[] = [];
    vi.stubGlobal('fetch', async (_: string, init: RequestInit) => {
      calls.push(init);
      return new Response(JSON.stringify({ error: 'missing or wrong bearer token' }), { status: 401 });
    });
    auth.signIn('tok');
    const err = await api.chains().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(401);
    expect(auth.state()).toBe('needed');
    await api.agui('c', {}, new AbortController().signal);
    for (const c of calls) expect((c.headers as Record<string, string>).Authorization).toBe('Bearer tok');
  });

  it('never puts the token in the WebSocket URL', () => {
    vi.stubGlobal('location', new URL('http://127.0.0.1:8080/'));
    auth.signIn('tok');
    expect(api.wsURL()).toBe('ws://127.0.0.1:8080/api/v1/ws');
  });
});
