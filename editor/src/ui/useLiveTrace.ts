import { useCallback, useEffect, useRef, useState } from 'react';
import type { Doc } from '../dsl';
import { Trace, type Frame } from '../trace';
import type { Highlight } from './Canvas';

export const NO_HIGHLIGHT: Highlight = { active: new Set(), visited: new Set(), failed: new Set(), edges: new Set() };

// useLiveTrace follows the WebSocket trace of the open chain: the nodes a
// run is in (active), has left (visited, failed) and the edges it took. A
// frame of another run starts afresh. Chain frames call onChains, so the
// chain list follows deploys made elsewhere.
export function useLiveTrace(chainId: string | null, doc: Doc | null, onChains: () => void): [Highlight, () => void] {
  const [highlight, setHighlight] = useState<Highlight & { runId?: string }>(NO_HIGHLIGHT);
  const trace = useRef<Trace | null>(null);
  const idRef = useRef(chainId);
  idRef.current = chainId;
  const docRef = useRef(doc);
  docRef.current = doc;

  useEffect(() => {
    const t = new Trace((f: Frame) => {
      if (f.type === 'chain') onChains();
      if (f.type === 'event' && f.chainId === idRef.current && (f.event.type === 'RUN_FINISHED' || f.event.type === 'RUN_ERROR')) {
        // The run is over: no node is still executing, whatever order the
        // trace frames came in.
        setHighlight((h) => (h.runId === f.runId && h.active.size ? { ...h, active: new Set(), visited: new Set([...h.visited, ...h.active]) } : h));
        return;
      }
      if (f.type !== 'node' || f.chainId !== idRef.current) return;
      setHighlight((h) => {
        const fresh = h.runId !== f.runId;
        const next = {
          runId: f.runId,
          active: new Set(fresh ? [] : h.active),
          visited: new Set(fresh ? [] : h.visited),
          failed: new Set(fresh ? [] : h.failed),
          edges: new Set(fresh ? [] : h.edges),
        };
        if (f.flow === 'IN') next.active.add(f.nodeId);
        else {
          next.active.delete(f.nodeId);
          next.visited.add(f.nodeId);
          if (f.error || f.relation === 'Failure') next.failed.add(f.nodeId);
          const d = docRef.current;
          const from = d?.nodes.find((n) => n.node.id === f.nodeId)?.key;
          for (const e of d?.edges ?? []) if (e.from === from && e.type === f.relation) next.edges.add(e.key);
        }
        return next;
      });
    });
    trace.current = t;
    return () => t.close();
  }, [onChains]);

  useEffect(() => {
    trace.current?.subscribe(chainId ? [chainId] : []);
    setHighlight(NO_HIGHLIGHT);
  }, [chainId]);

  const clear = useCallback(() => setHighlight(NO_HIGHLIGHT), []);
  return [highlight, clear];
}
