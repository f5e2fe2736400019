import { useState } from 'react';
import type { Live } from '../live';
import { newMessageRuns, type MessageRuns } from '../messageRun';
import type { JsonObject } from '../types';
import { MessageRun } from './MessageRun';
import { newThread, RunPanel, type Thread } from './RunPanel';
import { StoredRuns } from './StoredRuns';
import type { Doc } from '../dsl';

export type RunMode = 'chat' | 'message' | 'recorded';

// ChainRuns is what the Run tab keeps of one chain while the page is open:
// its mode, the chat thread and the messages sent.
export interface ChainRuns {
  mode: RunMode;
  thread: Thread;
  message: MessageRuns;
}

export function newChainRuns(isAgent: boolean, inputSchema?: JsonObject): ChainRuns {
  return { mode: isAgent ? 'chat' : 'message', thread: newThread(), message: newMessageRuns(inputSchema) };
}

interface Props {
  chainId: string;
  isAgent: boolean;
  deployed: boolean;
  dirty: boolean;
  inputSchema?: JsonObject;
  // runs is undefined until the chain is first run.
  runs: ChainRuns | undefined;
  setRuns: (f: (r: ChainRuns | undefined) => ChainRuns) => void;
  live: Live;
  nodeName: (id: string) => string;
  onRunStart: (runId: string) => void;
  // user is who chats run as; verifiedIdentity, whether the server decides.
  user: string;
  verifiedIdentity: boolean;
  onUser: (user: string) => void;
  doc: Doc | null;
  // onShowStored puts a recorded run on the canvas (null: the live trace).
  onShowStored: (l: Live | null) => void;
}

// RunTab runs the open chain: an agent chain as a chat over AG-UI, or any
// chain with one message whose data and metadata are typed as JSON.
export function RunTab({ chainId, isAgent, deployed, dirty, inputSchema, runs: kept, setRuns: keep, live, nodeName, onRunStart, user, verifiedIdentity, onUser, doc, onShowStored }: Props) {
  // One start per chain (the tab is keyed by it): a thread id must not
  // change between renders before the first run keeps it.
  const [initial] = useState(() => newChainRuns(isAgent, inputSchema));
  const runs = kept ?? initial;
  const setRuns = (f: (r: ChainRuns) => ChainRuns) => keep((r) => f(r ?? initial));
  const mode = isAgent || runs.mode !== 'chat' ? runs.mode : 'message';
  const modes: RunMode[] = isAgent ? ['chat', 'message', 'recorded'] : ['message', 'recorded'];
  const label = { chat: 'Chat (AG-UI)', message: 'Message (JSON)', recorded: 'Recorded runs' };
  return (
    <div className="run-tab">
      <div className="run-mode" role="radiogroup" aria-label="Run as">
        {modes.map((m) => (
          <button key={m} type="button" role="radio" aria-checked={mode === m} onClick={() => setRuns((r) => ({ ...r, mode: m }))}>
            {label[m]}
          </button>
        ))}
      </div>
      {mode !== 'recorded' && !deployed && <p className="note">Deploy the chain to run it.</p>}
      {mode !== 'recorded' && deployed && dirty && <p className="note">Runs use the deployed version; your unsaved changes are not in it.</p>}
      {mode === 'recorded' ? (
        <StoredRuns chainId={chainId} doc={doc} onShow={onShowStored} />
      ) : mode === 'chat' ? (
        <RunPanel
          chainId={chainId}
          deployed={deployed}
          thread={runs.thread}
          setThread={(f) => setRuns((r) => ({ ...r, thread: f(r.thread) }))}
          onRunStart={onRunStart}
          user={user}
          verifiedIdentity={verifiedIdentity}
          onUser={onUser}
        />
      ) : (
        <MessageRun chainId={chainId} deployed={deployed} runs={runs.message} setRuns={(f) => setRuns((r) => ({ ...r, message: f(r.message) }))} live={live} nodeName={nodeName} onRunStart={onRunStart} />
      )}
    </div>
  );
}
