import { api } from '../api';
import { chainId, exportChain, importChain, newChain, parseChain, type Doc } from '../dsl';
import type { ChainInfo } from '../types';
import type { Ask } from './Dialog';

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export type Status = { text: string; error?: boolean };

// What the chain list's actions need from the editor.
export interface ChainActionDeps {
  ask: (a: Ask) => Promise<string | null>;
  chains: ChainInfo[];
  id: string | null;
  doc: Doc | null;
  dirty: boolean;
  load: (d: Doc, savedAs: string | null) => void;
  refreshChains: () => void;
  setStatus: (s: Status | null) => void;
  // close empties the canvas (the open chain was deleted).
  close: () => void;
}

// chainActions are the chain list's actions: open, create, rename,
// duplicate, delete, import and export, each guarded against losing unsaved
// changes and reporting its outcome in the status line.
export function chainActions({ ask, chains, id, doc, dirty, load, refreshChains, setStatus, close }: ChainActionDeps) {
  const guard = async (): Promise<boolean> => {
    if (!dirty) return true;
    return (await ask({ title: 'Discard unsaved changes?', message: `${id || "This chain"} has changes that are not deployed.`, ok: 'Discard', danger: true })) !== null;
  };

  const open = async (cid: string) => {
    if (cid === id || !(await guard())) return;
    try {
      const d = importChain(await api.chain(cid));
      load(d, JSON.stringify(exportChain(d)));
    } catch (e) {
      setStatus({ text: `Cannot open ${cid}: ${(e as Error).message}`, error: true });
    }
  };

  const askId = async (title: string, input: string, ok: string) => {
    for (;;) {
      const v = await ask({ title, input, inputLabel: 'Chain id (letters, digits, - _ .)', ok });
      if (v === null) return null;
      if (!ID.test(v)) {
        input = v;
        setStatus({ text: `"${v}" is not a valid chain id`, error: true });
        continue;
      }
      if (chains.some((c) => c.id === v)) {
        input = v;
        setStatus({ text: `A chain "${v}" exists already`, error: true });
        continue;
      }
      return v;
    }
  };

  const create = async () => {
    if (!(await guard())) return;
    const v = await askId('New chain', '', 'Create');
    if (v) {
      load(newChain(v, v), null);
      setStatus({ text: `New chain ${v}: add nodes, then deploy.` });
    }
  };

  const rename = async (old: string) => {
    if (old === id && dirty) {
      setStatus({ text: 'Deploy or discard your changes before renaming this chain.', error: true });
      return;
    }
    const v = await askId(`Rename ${old}`, old, 'Rename');
    if (!v) return;
    try {
      const dsl = await api.chain(old);
      dsl.ruleChain.id = v;
      await api.save(v, dsl);
      await api.remove(old);
      refreshChains();
      if (old === id) {
        const d = importChain(dsl);
        load(d, JSON.stringify(exportChain(d)));
      }
      setStatus({ text: `Renamed ${old} to ${v}` });
    } catch (e) {
      setStatus({ text: `Rename failed: ${(e as Error).message}`, error: true });
    }
  };

  const duplicate = async (src: string) => {
    const v = await askId(`Duplicate ${src}`, `${src}-copy`, 'Duplicate');
    if (!v) return;
    try {
      const dsl = await api.chain(src);
      dsl.ruleChain.id = v;
      dsl.ruleChain.name = `${dsl.ruleChain.name ?? src} (copy)`;
      await api.save(v, dsl);
      refreshChains();
      setStatus({ text: `Duplicated ${src} as ${v}` });
    } catch (e) {
      setStatus({ text: `Duplicate failed: ${(e as Error).message}`, error: true });
    }
  };

  const del = async (cid: string) => {
    if ((await ask({ title: `Delete ${cid}?`, message: 'The chain is undeployed and its file removed.', ok: 'Delete', danger: true })) === null) return;
    try {
      await api.remove(cid);
      refreshChains();
      if (cid === id) close();
      setStatus({ text: `Deleted ${cid}` });
    } catch (e) {
      setStatus({ text: `Delete failed: ${(e as Error).message}`, error: true });
    }
  };

  const importFile = async (file: File) => {
    if (!(await guard())) return;
    try {
      const d = parseChain(await file.text());
      // A file without ruleChain.id keeps it absent (exported as it came);
      // deploying asks for one.
      load(d, null);
      setStatus({ text: `Imported ${file.name}: deploy to save it${chainId(d) ? ` as ${chainId(d)}` : ''}.` });
    } catch (e) {
      setStatus({ text: `Cannot import ${file.name}: ${(e as Error).message}`, error: true });
    }
  };

  const exportFile = () => {
    if (!doc) return;
    const blob = new Blob([JSON.stringify(exportChain(doc), null, 2) + '\n'], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `${id || 'chain'}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };

  return { guard, open, askId, create, rename, duplicate, del, importFile, exportFile };
}
