import { useCallback, useEffect, useState } from 'react';
import { api } from '../api';
import { auth, dropURLToken } from '../auth';
import type { ChainInfo, Components } from '../types';
import type { Status } from './chainActions';
import { SignIn } from './SignIn';

export interface Server {
  components: Components | null;
  chains: ChainInfo[];
  readOnly: boolean;
  // verifiedIdentity: the server decides who calls (serve --auth), not the
  // user id a request names.
  verifiedIdentity: boolean;
  refreshChains: () => void;
  // signedIn: the editor holds a token (so it can sign out).
  signedIn: boolean;
  signOut: () => void;
  // signIn is the sign-in prompt while the server asks for a token.
  signIn: React.ReactNode;
}

// useServer loads what the editor needs from the server (its components,
// the chains, whether it is read-only) and asks for the token when the
// server refuses a request, loading again once signed in.
export function useServer(setStatus: (s: Status | null) => void): Server {
  const [components, setComponents] = useState<Components | null>(null);
  const [chains, setChains] = useState<ChainInfo[]>([]);
  const [readOnly, setReadOnly] = useState(false);
  const [verifiedIdentity, setVerifiedIdentity] = useState(false);
  const [asking, setAsking] = useState(false);
  const [urlToken] = useState(() => dropURLToken(location, history));
  const [signedIn, setSignedIn] = useState(() => auth.token() !== '');

  const refreshChains = useCallback(() => {
    api.chains().then(setChains, (e: Error) => auth.state() !== 'needed' && setStatus({ text: `Cannot list chains: ${e.message}`, error: true }));
  }, [setStatus]);

  const loadAll = useCallback(() => {
    api.components().then(setComponents, (e: Error) => auth.state() !== 'needed' && setStatus({ text: `Cannot load components: ${e.message}`, error: true }));
    api.health().then(
      (h) => {
        setReadOnly(!!h.readOnly);
        setVerifiedIdentity(!!h.verifiedIdentity);
      },
      () => setReadOnly(false),
    );
    refreshChains();
  }, [refreshChains, setStatus]);

  useEffect(() => {
    const follow = () => {
      if (auth.state() === 'needed') setAsking(true);
      setSignedIn(auth.token() !== '');
    };
    const stop = auth.subscribe(follow);
    follow();
    loadAll();
    return stop;
  }, [loadAll]);

  const signIn = asking ? (
    <SignIn
      urlToken={urlToken}
      onDone={() => {
        setAsking(false);
        setStatus(null);
        loadAll();
      }}
    />
  ) : null;
  return { components, chains, readOnly, verifiedIdentity, refreshChains, signedIn, signOut: () => auth.signOut(), signIn };
}
