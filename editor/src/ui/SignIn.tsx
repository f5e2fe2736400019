import { useEffect, useRef, useState } from 'react';
import { api, APIError } from '../api';
import { auth } from '../auth';

interface Props {
  // urlToken: the address carried a ?token=, which the editor dropped.
  urlToken: boolean;
  onDone: () => void;
}

// SignIn asks for the token of a server started with --token, checks it
// with one API request and keeps it for the tab (see auth.ts).
export function SignIn({ urlToken, onDone }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!ref.current?.open) ref.current?.showModal();
  }, []);

  const submit = async () => {
    if (!value.trim() || busy) return;
    setBusy(true);
    setError(null);
    auth.signIn(value);
    try {
      await api.chains();
      onDone();
    } catch (e) {
      setError(e instanceof APIError && e.status === 401 ? 'The server refused this token.' : `Cannot reach the server: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    // Escape does not close it: nothing works until the server lets us in.
    <dialog ref={ref} className="dialog sign-in" aria-labelledby="sign-in-title" onCancel={(e) => e.preventDefault()} data-testid="sign-in">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <h2 id="sign-in-title">Sign in</h2>
        <p>This server needs its token (it was started with <code>--token</code>).</p>
        {urlToken && <p className="note">The address carried a token: it was removed from the address and not used, since addresses end up in the history and in logs. Enter it here instead.</p>}
        <label>
          Token
          <input type="password" autoFocus autoComplete="off" spellCheck={false} value={value} onChange={(e) => setValue(e.target.value)} aria-describedby="sign-in-msg sign-in-desc" />
        </label>
        <p className="desc" id="sign-in-desc">
          Kept for this tab only (sessionStorage), sent as the <code>Authorization</code> header and the WebSocket subprotocol, never in a URL.
        </p>
        <p className="msg" id="sign-in-msg" role={error ? 'alert' : undefined}>
          {error}
        </p>
        <div className="dialog-buttons">
          <button type="submit" className="primary" disabled={!value.trim() || busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </div>
      </form>
    </dialog>
  );
}
