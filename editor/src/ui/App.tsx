import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, APIError } from '../api';
import { chainId, chainOf, exportChain, withLayout, type Doc } from '../dsl';
import * as edit from '../edit';
import * as H from '../history';
import { locate, type Located } from '../problems';
import { relationOptions } from '../relations';
import type { JsonObject, Problem, RuleNode } from '../types';
import { Canvas, type Selection } from './Canvas';
import { EdgePanel } from './EdgePanel';
import { useLiveTrace } from './useLiveTrace';
import { Toolbar } from './Toolbar';
import { DemoNotice } from './DemoNotice';
import { defaultChatUser } from '../chatUser';
import { ChainList } from './ChainList';
import { ChainPanel } from './ChainPanel';
import { chainActions, type Status } from './chainActions';
import { useDialog } from './Dialog';
import { NodePanel } from './NodePanel';
import { Palette } from './Palette';
import { newChainRuns, RunTab, type ChainRuns } from './RunTab';
import { chatStore, loadChat, restoredTurns } from '../rejoin';
import { toolActions } from './toolActions';
import { toolViews } from '../agentTools';
import type { Live } from '../live';
import { Shortcuts, SHORTCUTS } from './Shortcuts';
import { Icon } from './Icon';
import { useServer } from './useServer';

const EMPTY_SEL: Selection = { nodes: new Set(), edges: new Set() };

export function App() {
  return (
    <ReactFlowProvider>
      <Editor />
    </ReactFlowProvider>
  );
}

function typing(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  return !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);
}

function Editor() {
  const flow = useReactFlow();
  const [ask, dialog] = useDialog();
  const [status, setStatus] = useState<Status | null>(null);
  const server = useServer(setStatus);
  const { components, chains, readOnly, refreshChains } = server;
  const [hist, setHist] = useState<H.History<Doc> | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [sel, setSel] = useState<Selection>(EMPTY_SEL);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [warnings, setWarnings] = useState<Problem[]>([]);
  const [tab, setTab] = useState<'inspect' | 'run'>('inspect');
  const [runs, setRuns] = useState<Record<string, ChainRuns>>({});
  // The user the Run panel's chats run as, for every chain; null until
  // changed: the default follows the server (see chatUser.ts).
  const [chatUser, setChatUser] = useState<string | null>(null);
  const [help, setHelp] = useState(false);
  const clip = useRef<edit.Clip | null>(null);

  const doc = hist?.present ?? null;
  const id = doc ? chainId(doc) : null;
  const docJSON = useMemo(() => (doc ? JSON.stringify(exportChain(doc)) : null), [doc]);
  const dirty = doc !== null && docJSON !== saved;
  const deployed = !!id && chains.some((c) => c.id === id);
  const forms = useMemo(() => new Map((components?.nodes ?? []).map((f) => [f.type, f])), [components]);

  const views = useMemo(() => (doc ? toolViews(doc, chains) : []), [doc, chains]);
  const [highlight, clearHighlight] = useLiveTrace(id, doc, views, refreshChains);
  // stored is a recorded run the Run tab shows on the canvas instead of the live trace.
  const [stored, setStored] = useState<Live | null>(null);

  useEffect(() => {
    const h = (e: BeforeUnloadEvent) => {
      if (dirty) e.preventDefault();
    };
    window.addEventListener('beforeunload', h);
    return () => window.removeEventListener('beforeunload', h);
  }, [dirty]);

  const change = useCallback((f: (d: Doc) => Doc, tag: string | null = null) => {
    setHist((h) => (h ? H.push(h, f(h.present), tag) : h));
  }, []);

  // load opens a document; what was about the previous chain goes with it
  // (the status line, problems, selection; the trace follows the id).
  const load = (d: Doc, savedAs: string | null) => {
    setStatus(null);
    setHist(H.start(d));
    setSaved(savedAs);
    setSel(EMPTY_SEL);
    setProblems([]);
    setWarnings([]);
    setTab('inspect');
    setTimeout(() => flow.fitView({ padding: 0.2, maxZoom: 1 }), 50);
  };

  const { open, askId, create, rename, duplicate, del, importFile, exportFile } = chainActions({
    ask,
    chains,
    id,
    doc,
    dirty,
    load,
    refreshChains,
    setStatus,
    close: () => {
      setHist(null);
      setSaved(null);
    },
  });

  // After a reload, the chat the tab was in opens again in the Run tab, its
  // runs read again from the server (a run still going, live).
  // The chat is the one kept when the page loaded, not one sent since.
  const [chat] = useState(() => loadChat(chatStore));
  const restored = useRef(false);
  useEffect(() => {
    if (restored.current) return;
    const target = chat && chains.find((c) => c.id === chat.chainId);
    if (!chat || !target) return;
    restored.current = true;
    void (async () => {
      await open(chat.chainId);
      setRuns((rs) => ({
        ...rs,
        [chat.chainId]: { ...newChainRuns(true, target.inputSchema), thread: { threadId: chat.threadId, turns: restoredTurns(chat), rejoin: true } },
      }));
      setTab('run');
    })();
  }, [chains, open]);

  const deploy = async () => {
    if (!doc) return;
    let id = chainId(doc);
    let target = doc;
    if (!id) {
      const v = await askId('The chain needs an id to deploy', '', 'Deploy');
      if (!v) return;
      id = v;
      target = { ...doc, top: { ...doc.top, ruleChain: { ...chainOf(doc), id: v } as JsonObject } };
      change(() => target);
    }
    const dsl = exportChain(target);
    setStatus({ text: `Deploying ${id}…` });
    try {
      const info = await api.save(id, dsl);
      setSaved(JSON.stringify(dsl));
      setProblems([]);
      setWarnings(info?.warnings ?? []);
      refreshChains();
      setStatus({ text: `Deployed ${id}${info?.warnings?.length ? ` with ${info.warnings.length} warning(s)` : ''}` });
    } catch (e) {
      if (e instanceof APIError && e.problems.length) {
        setProblems(e.problems);
        setWarnings(e.warnings);
        setStatus({ text: `Not deployed: ${e.message} (${e.problems.length} problem${e.problems.length === 1 ? '' : 's'})`, error: true });
        const first = locate(e.problems[0]).node;
        if (first !== undefined && doc.nodes[first]) setSel({ nodes: new Set([doc.nodes[first].key]), edges: new Set() });
        setTab('inspect');
      } else setStatus({ text: `Deploy failed: ${(e as Error).message}`, error: true });
    }
  };

  const addNodeAt = (type: string, at?: { x: number; y: number }) => {
    if (!doc) return;
    const name = type === 'ai/agent' ? 'Agent' : (type.split('/').pop() ?? type);
    const pos = at ?? flow.screenToFlowPosition({ x: window.innerWidth / 2, y: window.innerHeight / 2 });
    const [next, key] = edit.addNode(doc, type, name, pos);
    change(() => next);
    setSel({ nodes: new Set([key]), edges: new Set() });
    setTab('inspect');
  };

  const connectAsk = async (from: string, to: string) => {
    if (!doc) return;
    const n = doc.nodes.find((x) => x.key === from);
    if (!n) return;
    const used = doc.edges.filter((e) => e.from === from).map((e) => e.type);
    const choices = relationOptions(forms.get(n.node.type), n.node, used);
    const type = await ask({ title: 'Connection relation', message: `When ${n.node.name || n.node.id} tells…`, choices, input: choices[0], inputLabel: 'Relation type (or type a custom one)', ok: 'Connect' });
    if (type) change((d) => edit.connect(d, from, to, type));
  };

  const removeSelection = () => {
    if (!sel.nodes.size && !sel.edges.size) return;
    change((d) => edit.remove(d, sel.nodes, sel.edges));
    setSel(EMPTY_SEL);
  };

  // Keyboard shortcuts (also listed by "?").
  const keys = useRef<(e: KeyboardEvent) => void>(() => {});
  keys.current = (e: KeyboardEvent) => {
    const mod = e.ctrlKey || e.metaKey;
    const k = e.key.toLowerCase();
    if (mod && k === 's') {
      e.preventDefault();
      void deploy();
      return;
    }
    if (document.querySelector('dialog[open]') || typing(e.target)) return;
    if (mod && k === 'z' && !e.shiftKey) (e.preventDefault(), setHist((h) => h && H.undo(h)));
    else if (mod && (k === 'y' || (k === 'z' && e.shiftKey))) (e.preventDefault(), setHist((h) => h && H.redo(h)));
    else if (mod && k === 'c' && doc && sel.nodes.size) clip.current = edit.copy(doc, sel.nodes);
    else if (mod && k === 'v' && doc && clip.current) {
      const [next, added] = edit.paste(doc, clip.current);
      change(() => next);
      setSel({ nodes: new Set(added), edges: new Set() });
    } else if (mod && k === 'a' && doc) (e.preventDefault(), setSel({ nodes: new Set(doc.nodes.map((n) => n.key)), edges: new Set(doc.edges.map((x) => x.key)) }));
    else if (k === 'delete' || k === 'backspace') removeSelection();
    else if (k === 'escape') setSel(EMPTY_SEL);
    else if (k === 'f' && !mod) flow.fitView({ padding: 0.2, maxZoom: 1, duration: 200 });
    else if (k === 'l' && !mod && doc) change((d) => withLayout(d));
    else if (k === '?') setHelp(true);
    else if (e.altKey && k === 'n') void create();
    else if (e.altKey && k === 'r') setTab('run');
    else if (e.altKey && k === 'i') setTab('inspect');
  };
  useEffect(() => {
    const h = (e: KeyboardEvent) => keys.current(e);
    window.addEventListener('keydown', h);
    return () => window.removeEventListener('keydown', h);
  }, []);

  // Problems by node key and edge key.
  const located: Located[] = useMemo(() => problems.map(locate), [problems]);
  const problemCount = useMemo(() => {
    const m = new Map<string, number>();
    for (const l of located) if (l.node !== undefined && doc?.nodes[l.node]) m.set(doc.nodes[l.node].key, (m.get(doc.nodes[l.node].key) ?? 0) + 1);
    return m;
  }, [located, doc]);
  const problemEdges = useMemo(() => new Set(located.filter((l) => l.connection !== undefined && doc?.edges[l.connection!]).map((l) => doc!.edges[l.connection!].key)), [located, doc]);

  const selectedNode = doc && sel.nodes.size === 1 ? doc.nodes.find((n) => sel.nodes.has(n.key)) : undefined;
  const selectedEdge = doc && sel.edges.size === 1 && sel.nodes.size === 0 ? doc.edges.find((e) => sel.edges.has(e.key)) : undefined;
  const info = chains.find((c) => c.id === id);
  const isAgent = info ? !!info.isAgent : !!doc?.nodes.some((n) => n.node.type === 'ai/agent');
  const tools = toolActions({ doc, chains, change, setStatus, inspect: (key) => (setSel({ nodes: new Set([key]), edges: new Set() }), setTab('inspect')) });

  return (
    <div className="app">
      <header className="topbar">
        <h1>ruleagent</h1>
        <DemoNotice />
        {doc && (
          <span className="doc-title">
            {chainOf(doc).name || id} <code>{id}</code>
            {dirty && (
              <span className="dirty" title="Unsaved changes">
                <Icon name="dot" label="Unsaved changes" size={10} />
              </span>
            )}
          </span>
        )}
        <span className="spacer" />
        <Toolbar
          canUndo={!!hist?.past.length}
          canRedo={!!hist?.future.length}
          open={!!doc}
          readOnly={readOnly}
          onUndo={() => setHist((h) => h && H.undo(h))}
          onRedo={() => setHist((h) => h && H.redo(h))}
          onLayout={() => change((d) => withLayout(d))}
          onFit={() => flow.fitView({ padding: 0.2, maxZoom: 1, duration: 200 })}
          onExport={exportFile}
          onDeploy={deploy}
          onHelp={() => setHelp(true)}
        />
        {server.signedIn && (
          <button type="button" onClick={server.signOut} title="Forget the token in this tab">
            Sign out
          </button>
        )}
      </header>
      {status && (
        <div className={`status${status.error ? ' error' : ''}`} role={status.error ? 'alert' : 'status'}>
          {status.text}
          <button type="button" aria-label="Dismiss" onClick={() => setStatus(null)}>
            <Icon name="close" />
          </button>
        </div>
      )}
      <aside className="sidebar">
        <ChainList chains={chains} open={id} draft={id} onOpen={open} onNew={create} onRename={rename} onDuplicate={duplicate} onDelete={del} onImport={importFile} />
        {doc && components && <Palette forms={components.nodes} onAdd={(t) => addNodeAt(t)} builtins={components.builtins ?? []} chains={chains.filter((c) => c.id !== id)} onAddTool={(entry) => tools.addTool(selectedNode?.key ?? '', entry)} />}
      </aside>
      <main className="main">
        {doc ? (
          <Canvas
            doc={doc}
            forms={forms}
            selection={sel}
            highlight={stored ?? highlight}
            problemCount={problemCount}
            problemEdges={problemEdges}
            onSelect={(s) => setSel(s)}
            onMove={(moves, tag) => change((d) => edit.moveNodes(d, moves), tag)}
            onConnect={(from, to) => void connectAsk(from, to)}
            onDropNode={(t, at) => addNodeAt(t, at)}
            onEdgeOpen={(k) => setSel({ nodes: new Set(), edges: new Set([k]) })}
            views={views}
            onToolOpen={tools.openTool}
            onOpenChain={(c) => void open(c)}
            onRemoveTool={tools.removeTool}
            onAddTool={tools.addTool}
          />
        ) : (
          <div className="welcome">
            <h2>Open a chain, or create one</h2>
            <p>Pick a chain on the left, press New, or import a chain file. Press ? for the keyboard shortcuts.</p>
          </div>
        )}
      </main>
      {doc && (
        <aside className="panel">
          <div className="tabs" role="tablist">
            <button type="button" role="tab" aria-selected={tab === 'inspect'} onClick={() => setTab('inspect')}>
              Inspect
            </button>
            <button type="button" role="tab" aria-selected={tab === 'run'} onClick={() => setTab('run')}>
              Run
            </button>
          </div>
          <div className="panel-body" role="tabpanel">
            {tab === 'inspect' &&
              (selectedNode ? (
                <NodePanel
                  key={selectedNode.key}
                  doc={doc}
                  node={selectedNode}
                  form={forms.get(selectedNode.node.type)}
                  forms={forms}
                  builtins={components?.builtins ?? []}
                  chains={chains}
                  problems={located.filter((l) => l.node !== undefined && doc.nodes[l.node]?.key === selectedNode.key)}
                  onNode={(f: (n: RuleNode) => RuleNode, tag) => change((d) => edit.updateNode(d, selectedNode.key, f), tag === null ? null : `${selectedNode.key}.${tag}`)}
                  onFirst={() => change((d) => edit.setFirst(d, selectedNode.key))}
                  onConnect={(to, type) => change((d) => edit.connect(d, selectedNode.key, to, type))}
                  onEdgeType={(k, type) => change((d) => edit.setEdgeType(d, k, type))}
                  onEdgeRemove={(k) => change((d) => edit.remove(d, new Set(), new Set([k])))}
                />
              ) : selectedEdge ? (
                <EdgePanel doc={doc} edgeKey={selectedEdge.key} forms={forms} onType={(t) => change((d) => edit.setEdgeType(d, selectedEdge.key, t))} onRemove={removeSelection} />
              ) : (
                <ChainPanel doc={doc} located={located} warnings={warnings} selected={sel.nodes.size} onChain={(patch: JsonObject, tag) => change((d) => ({ ...d, top: { ...d.top, ruleChain: { ...chainOf(d), ...patch } as JsonObject } }), tag)} />
              ))}
            {tab === 'run' && id && (
              <RunTab
                key={id}
                chainId={id}
                isAgent={isAgent}
                deployed={deployed}
                dirty={dirty}
                inputSchema={info?.inputSchema}
                runs={runs[id]}
                setRuns={(f) => setRuns((rs) => ({ ...rs, [id]: f(rs[id]) }))}
                live={highlight}
                nodeName={(nid) => doc.nodes.find((n) => n.node.id === nid)?.node.name || nid}
                onRunStart={clearHighlight}
                user={chatUser ?? defaultChatUser(server.verifiedIdentity)}
                verifiedIdentity={server.verifiedIdentity}
                onUser={setChatUser}
                doc={doc}
                onShowStored={setStored}
              />
            )}
          </div>
        </aside>
      )}
      {help && <Shortcuts onClose={() => setHelp(false)} list={SHORTCUTS} />}
      {dialog}
      {server.signIn}
    </div>
  );
}
