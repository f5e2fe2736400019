// The live trace: a WebSocket to /api/v1/ws subscribed to the open chain.
// Node frames light up the node being executed and the edges taken; chain
// frames tell the chain list to refresh. It reconnects after a drop.

import { api } from './api';
import { auth, type Auth } from './auth';

export interface NodeFrame {
  type: 'node';
  chainId: string;
  runId: string;
  nodeId: string;
  // IN: the node got a message; OUT: it told its result on relation;
  // DONE: it completed (durationMs).
  flow: 'IN' | 'OUT' | 'DONE';
  relation?: string;
  error?: string;
  ts?: number;
  durationMs?: number;
}

export interface ChainFrame {
  type: 'chain';
  chainId: string;
  change: 'deployed' | 'deleted';
}

export interface EventFrame {
  type: 'event';
  chainId: string;
  runId: string;
  event: { type: string };
}

export type Frame = NodeFrame | ChainFrame | EventFrame | { type: 'subscribed'; chains: string[] } | { type: 'error'; message: string };

// Trace connects once the server has answered an API request (so that a
// server asking for a token is signed in to first), sends the token as a
// subprotocol, reconnects after a drop (backing off up to 30 s) and after
// a sign-in, and disconnects on sign-out.
export class Trace {
  private ws: WebSocket | null = null;
  private chains: string[] = [];
  private closed = false;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private delay = 1000;
  private unsubscribe: () => void;

  constructor(
    private onFrame: (f: Frame) => void,
    private a: Auth = auth,
  ) {
    this.unsubscribe = a.subscribe(() => this.follow());
    this.follow();
  }

  subscribe(chains: string[]) {
    const old = this.chains;
    this.chains = chains;
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    const gone = old.filter((c) => !chains.includes(c));
    if (gone.length) this.ws.send(JSON.stringify({ type: 'unsubscribe', chains: gone }));
    if (chains.length) this.ws.send(JSON.stringify({ type: 'subscribe', chains }));
  }

  close() {
    this.closed = true;
    this.unsubscribe();
    this.drop();
  }

  // follow connects when the server lets the editor in and drops the
  // connection when it does not (or the token changed).
  private follow() {
    this.drop();
    if (!this.closed && this.a.state() === 'ok') this.connect();
  }

  private drop() {
    clearTimeout(this.retry);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      ws.close();
    }
  }

  private connect() {
    const protocols = this.a.protocols();
    const ws = protocols.length ? new WebSocket(api.wsURL(), protocols) : new WebSocket(api.wsURL());
    this.ws = ws;
    ws.onopen = () => {
      this.delay = 1000;
      if (this.chains.length) ws.send(JSON.stringify({ type: 'subscribe', chains: this.chains }));
    };
    ws.onmessage = (m) => {
      try {
        this.onFrame(JSON.parse(String(m.data)) as Frame);
      } catch {
        // a frame that is not JSON is not ours to show
      }
    };
    ws.onclose = () => {
      if (this.closed || this.ws !== ws) return;
      this.delay = Math.min(this.delay * 2, 30000);
      this.retry = setTimeout(() => this.follow(), this.delay);
    };
  }
}
