// The live trace: a WebSocket to /api/v1/ws subscribed to the open chain.
// Node frames light up the node being executed and the edges taken; chain
// frames tell the chain list to refresh. It reconnects after a drop.

import { api } from './api';

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

export class Trace {
  private ws: WebSocket | null = null;
  private chains: string[] = [];
  private closed = false;
  private retry: ReturnType<typeof setTimeout> | undefined;

  constructor(private onFrame: (f: Frame) => void) {
    this.connect();
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
    clearTimeout(this.retry);
    this.ws?.close();
  }

  private connect() {
    const ws = new WebSocket(api.wsURL());
    this.ws = ws;
    ws.onopen = () => {
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
      if (!this.closed) this.retry = setTimeout(() => this.connect(), 2000);
    };
  }
}
