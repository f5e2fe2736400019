import type { ToolView } from '../agentTools';
import { isObject, type Doc } from '../dsl';
import * as edit from '../edit';
import { newTool, pickTarget, removeTool, setKeys, toolsOf, TOOL_TYPES, type ToolEntry, type ToolType } from '../tools';
import type { ChainInfo, JsonObject } from '../types';
import type { Status } from './chainActions';

export interface ToolActionDeps {
  doc: Doc | null;
  chains: ChainInfo[];
  change: (f: (d: Doc) => Doc, tag?: string | null) => void;
  // inspect selects the agent node and shows its panel.
  inspect: (agentKey: string) => void;
  setStatus: (s: Status | null) => void;
}

// reveal scrolls the agent panel to a tool's card (or the model settings)
// once the panel shows, and moves the focus there.
function reveal(index: number) {
  setTimeout(() => {
    const el = document.querySelector<HTMLElement>(index < 0 ? 'section[aria-label="Model"]' : `[data-tool-index="${index}"]`);
    el?.scrollIntoView({ block: 'start' });
    el?.focus({ preventScroll: true });
  }, 60);
}

// entryFor makes the tools entry a palette item or a "+" menu asks for: a
// type, a builtin ({type: builtin, name}) or a chain ({type, targetId}),
// filled in from that chain.
export function entryFor(spec: ToolType | JsonObject, chains: ChainInfo[]): ToolEntry | null {
  if (typeof spec === 'string') return newTool(spec);
  const type = spec.type as ToolType;
  if (!TOOL_TYPES.includes(type)) return null;
  if ((type === 'rulechain' || type === 'agent') && typeof spec.targetId === 'string') {
    const chain = chains.find((c) => c.id === spec.targetId);
    return chain ? pickTarget(newTool(type), chain) : setKeys(newTool(type), { targetId: spec.targetId });
  }
  return setKeys(newTool(type), spec);
}

// toolActions are what the tool nodes under an agent do: each edits the
// agent node's tools array, never the chain's nodes or connections.
export function toolActions({ doc, chains, change, inspect, setStatus }: ToolActionDeps) {
  const setTools = (agentKey: string, f: (list: ToolEntry[]) => ToolEntry[]) =>
    change((d) =>
      edit.updateNode(d, agentKey, (n) => {
        const config = isObject(n.configuration) ? n.configuration : {};
        return { ...n, configuration: setKeys(config, { tools: f(toolsOf(config)) }) };
      }),
    );

  const show = (agentKey: string, index: number) => {
    inspect(agentKey);
    reveal(index);
  };
  const openTool = (v: ToolView) => show(v.agentKey, v.index);

  const removeToolOf = (v: ToolView) => setTools(v.agentKey, (list) => removeTool(list, v.index));

  const addTool = (agentKey: string, spec: ToolType | JsonObject) => {
    const agent = doc?.nodes.find((n) => n.key === agentKey && n.node.type === 'ai/agent');
    if (!agent) {
      setStatus({ text: 'Drop a tool onto an agent node: tools belong to an agent.', error: true });
      return;
    }
    const entry = entryFor(spec, chains);
    if (!entry) return;
    const index = toolsOf(agent.node.configuration).length;
    setTools(agentKey, (list) => [...list, entry]);
    show(agentKey, index);
  };

  return { openTool, removeTool: removeToolOf, addTool };
}
