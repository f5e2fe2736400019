import { useCallback, useEffect, useRef, useState } from 'react';
import type { ToolView } from '../agentTools';
import type { Doc } from '../dsl';
import { follow, NO_LIVE, type Live } from '../live';
import { Trace, type Frame } from '../trace';

// useLiveTrace follows the WebSocket trace of the open chain (see live.ts).
// Chain frames call onChains, so the chain list follows deploys made
// elsewhere. Another chain starts afresh.
export function useLiveTrace(chainId: string | null, doc: Doc | null, views: ToolView[], onChains: () => void): [Live, () => void] {
  const [live, setLive] = useState<Live>(NO_LIVE);
  const trace = useRef<Trace | null>(null);
  const at = useRef({ chainId, doc, views });
  at.current = { chainId, doc, views };

  useEffect(() => {
    const t = new Trace((f: Frame) => {
      if (f.type === 'chain') onChains();
      if ((f.type === 'node' || f.type === 'event') && f.chainId === at.current.chainId) setLive((l) => follow(l, f, at.current.doc, at.current.views));
    });
    trace.current = t;
    return () => t.close();
  }, [onChains]);

  useEffect(() => {
    trace.current?.subscribe(chainId ? [chainId] : []);
    setLive(NO_LIVE);
  }, [chainId]);

  const clear = useCallback(() => setLive(NO_LIVE), []);
  return [live, clear];
}
