import {
  Background,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  useReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type NodeChange,
} from '@xyflow/react';
import { useCallback, useMemo, useRef, useState } from 'react';
import type { ToolView } from '../agentTools';
import type { Doc } from '../dsl';
import { NODE_H, NODE_W, toolPositions } from '../layout';
import type { Live } from '../live';
import type { ComponentForm, JsonObject } from '../types';
import { RuleNodeView, type RuleFlowNode } from './RuleNodeView';
import { ToolNodeView, type ToolFlowNode } from './ToolNodeView';
import { toolsOf, type ToolType } from '../tools';
import { relationOptions } from '../relations';

export const NODE_MIME = 'application/x-ruleagent-node';
// TOOL_MIME carries a tools entry dragged from the palette onto an agent.
export const TOOL_MIME = 'application/x-ruleagent-tool';

export interface Selection {
  nodes: Set<string>;
  edges: Set<string>;
}

interface Props {
  doc: Doc;
  forms: Map<string, ComponentForm>;
  selection: Selection;
  highlight: Live;
  // views are the agents' models and tools, drawn under them.
  views: ToolView[];
  problemCount: Map<string, number>;
  problemEdges: Set<string>;
  onSelect: (s: Selection) => void;
  onMove: (moves: Map<string, { x: number; y: number }>, tag: string) => void;
  onConnect: (from: string, to: string) => void;
  onDropNode: (type: string, at: { x: number; y: number }) => void;
  onEdgeOpen: (key: string) => void;
  onToolOpen: (v: ToolView) => void;
  onOpenChain: (id: string) => void;
  onRemoveTool: (v: ToolView) => void;
  onAddTool: (agentKey: string, entry: ToolType | JsonObject) => void;
}

type FlowNode = RuleFlowNode | ToolFlowNode;

const nodeTypes = { rule: RuleNodeView, tool: ToolNodeView };

export function Canvas(p: Props) {
  const { screenToFlowPosition } = useReactFlow();
  const [dims, setDims] = useState<Record<string, { width: number; height: number }>>({});
  const drag = useRef(0);

  const ruleNodes: RuleFlowNode[] = useMemo(
    () =>
      p.doc.nodes.map((n) => {
        const id = n.node.id ?? '';
        return {
          id: n.key,
          type: 'rule' as const,
          position: { x: n.x, y: n.y },
          selected: p.selection.nodes.has(n.key),
          measured: dims[n.key],
          data: {
            name: n.node.name ?? '',
            type: n.node.type,
            id,
            first: n.key === p.doc.firstKey,
            agent: n.node.type === 'ai/agent',
            tools: toolsOf(n.node.configuration).length,
            active: p.highlight.active.has(id),
            visited: p.highlight.visited.has(id),
            failed: p.highlight.failed.has(id),
            problems: p.problemCount.get(n.key) ?? 0,
            outputs: relationOptions(p.forms.get(n.node.type), n.node).length > 0 || p.doc.edges.some((e) => e.from === n.key),
            onAddTool: n.node.type === 'ai/agent' ? (t: ToolType) => p.onAddTool(n.key, t) : undefined,
          },
        };
      }),
    [p, dims],
  );

  // The tool nodes follow their agent: rows centred under it.
  const toolNodes: ToolFlowNode[] = useMemo(() => {
    const out: ToolFlowNode[] = [];
    for (const n of p.doc.nodes) {
      const views = p.views.filter((v) => v.agentKey === n.key);
      if (!views.length) continue;
      const d = dims[n.key];
      toolPositions(n.x, n.y, d?.width ?? NODE_W, d?.height ?? NODE_H, views.length).forEach((at, i) => {
        const v = views[i];
        out.push({
          id: v.id,
          type: 'tool',
          position: at,
          draggable: false,
          selectable: false,
          // nopan: a click or double-click is the node's, not the pane's
          // (the pane's double-click zoom would swallow it).
          className: 'nopan',
          connectable: false,
          measured: dims[v.id],
          data: { view: v, light: p.highlight.tools.get(v.id), onOpenChain: p.onOpenChain, onRemove: p.onRemoveTool },
        });
      });
    }
    return out;
  }, [p, dims]);
  const nodes: FlowNode[] = useMemo(() => [...ruleNodes, ...toolNodes], [ruleNodes, toolNodes]);

  const edges: Edge[] = useMemo(
    () =>
      p.doc.edges.map((e) => {
        const taken = p.highlight.edges.has(e.key);
        const bad = p.problemEdges.has(e.key);
        return {
          id: e.key,
          source: e.from,
          target: e.to,
          label: e.type,
          selected: p.selection.edges.has(e.key),
          animated: taken,
          className: [taken ? 'taken' : '', bad ? 'invalid' : '', e.type === 'Failure' ? 'failure' : ''].filter(Boolean).join(' '),
          markerEnd: { type: MarkerType.ArrowClosed },
          ariaLabel: `${e.type} connection`,
        };
      }),
    [p.doc, p.selection, p.highlight, p.problemEdges],
  );
  const toolEdges: Edge[] = useMemo(
    () =>
      p.views.map((v) => {
        const light = p.highlight.tools.get(v.id);
        return {
          id: `tool:${v.id}`,
          source: v.agentKey,
          sourceHandle: 'tools',
          target: v.id,
          selectable: false,
          focusable: false,
          deletable: false,
          animated: light === 'active',
          className: `tool-edge${light ? ` ${light}` : ''}`,
        };
      }),
    [p.views, p.highlight],
  );
  const allEdges = useMemo(() => [...edges, ...toolEdges], [edges, toolEdges]);

  const onNodesChange = useCallback(
    (changes: NodeChange<FlowNode>[]) => {
      const toolIds = new Set(p.views.map((v) => v.id));
      const moves = new Map<string, { x: number; y: number }>();
      let sel: Set<string> | null = null;
      const newDims: Record<string, { width: number; height: number }> = {};
      for (const c of changes) {
        if (c.type === 'dimensions' && c.dimensions) newDims[c.id] = c.dimensions;
        // The tool nodes are a view of their agent's configuration.
        if (c.type === 'dimensions' || ('id' in c && toolIds.has(c.id))) continue;
        if (c.type === 'position' && c.position) moves.set(c.id, c.position);
        else if (c.type === 'select') {
          sel ??= new Set(p.selection.nodes);
          if (c.selected) sel.add(c.id);
          else sel.delete(c.id);
        }
      }
      if (Object.keys(newDims).length) setDims((d) => ({ ...d, ...newDims }));
      if (moves.size) p.onMove(moves, `drag${drag.current}`);
      if (sel) p.onSelect({ nodes: sel, edges: p.selection.edges });
    },
    [p],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange[]) => {
      let sel: Set<string> | null = null;
      for (const c of changes) {
        if (c.type === 'select' && !c.id.startsWith('tool:')) {
          sel ??= new Set(p.selection.edges);
          if (c.selected) sel.add(c.id);
          else sel.delete(c.id);
        }
      }
      if (sel) p.onSelect({ nodes: p.selection.nodes, edges: sel });
    },
    [p],
  );

  const onConnect = useCallback((c: Connection) => p.onConnect(c.source, c.target), [p]);

  const onDrop = useCallback(
    (e: React.DragEvent) => {
      const tool = e.dataTransfer.getData(TOOL_MIME);
      if (tool) {
        e.preventDefault();
        const agent = (e.target as HTMLElement).closest('[data-agent]');
        const key = agent?.closest('.react-flow__node')?.getAttribute('data-id');
        p.onAddTool(key ?? '', JSON.parse(tool) as JsonObject);
        return;
      }
      const type = e.dataTransfer.getData(NODE_MIME);
      if (!type) return;
      e.preventDefault();
      p.onDropNode(type, screenToFlowPosition({ x: e.clientX, y: e.clientY }));
    },
    [p, screenToFlowPosition],
  );

  return (
    <div className="canvas" onDrop={onDrop} onDragOver={(e) => e.preventDefault()} data-testid="canvas">
      <ReactFlow
        nodes={nodes}
        edges={allEdges}
        nodeTypes={nodeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onNodeDragStart={() => {
          drag.current++;
        }}
        onEdgeDoubleClick={(_, e) => !e.id.startsWith('tool:') && p.onEdgeOpen(e.id)}
        onNodeClick={(_, n) => n.type === 'tool' && p.onToolOpen((n as ToolFlowNode).data.view)}
        onNodeDoubleClick={(_, n) => {
          const v = n.type === 'tool' ? (n as ToolFlowNode).data.view : null;
          if (v?.target) p.onOpenChain(v.target);
        }}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={['Meta', 'Control']}
        colorMode="system"
        fitView
        fitViewOptions={{ maxZoom: 1, padding: 0.2 }}
        minZoom={0.2}
        defaultEdgeOptions={{ type: 'smoothstep' }}
      >
        <Background />
        <MiniMap pannable zoomable ariaLabel="Minimap" />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
