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
import type { Doc } from '../dsl';
import type { ComponentForm } from '../types';
import { RuleNodeView, type RuleFlowNode } from './RuleNodeView';
import { toolsOf } from '../tools';
import { relationOptions } from '../relations';

export const NODE_MIME = 'application/x-ruleagent-node';

export interface Selection {
  nodes: Set<string>;
  edges: Set<string>;
}

export interface Highlight {
  active: Set<string>;
  visited: Set<string>;
  failed: Set<string>;
  edges: Set<string>;
}

interface Props {
  doc: Doc;
  forms: Map<string, ComponentForm>;
  selection: Selection;
  highlight: Highlight;
  problemCount: Map<string, number>;
  problemEdges: Set<string>;
  onSelect: (s: Selection) => void;
  onMove: (moves: Map<string, { x: number; y: number }>, tag: string) => void;
  onConnect: (from: string, to: string) => void;
  onDropNode: (type: string, at: { x: number; y: number }) => void;
  onEdgeOpen: (key: string) => void;
}

const nodeTypes = { rule: RuleNodeView };

export function Canvas(p: Props) {
  const { screenToFlowPosition } = useReactFlow();
  const [dims, setDims] = useState<Record<string, { width: number; height: number }>>({});
  const drag = useRef(0);

  const nodes: RuleFlowNode[] = useMemo(
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
          },
        };
      }),
    [p.doc, p.forms, p.selection, p.highlight, p.problemCount, dims],
  );

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

  const onNodesChange = useCallback(
    (changes: NodeChange<RuleFlowNode>[]) => {
      const moves = new Map<string, { x: number; y: number }>();
      let sel: Set<string> | null = null;
      const newDims: Record<string, { width: number; height: number }> = {};
      for (const c of changes) {
        if (c.type === 'position' && c.position) moves.set(c.id, c.position);
        else if (c.type === 'select') {
          sel ??= new Set(p.selection.nodes);
          if (c.selected) sel.add(c.id);
          else sel.delete(c.id);
        } else if (c.type === 'dimensions' && c.dimensions) newDims[c.id] = c.dimensions;
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
        if (c.type === 'select') {
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
        edges={edges}
        nodeTypes={nodeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onNodeDragStart={() => {
          drag.current++;
        }}
        onEdgeDoubleClick={(_, e) => p.onEdgeOpen(e.id)}
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
