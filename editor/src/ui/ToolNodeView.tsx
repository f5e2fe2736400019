import { Handle, Position, type Node, type NodeProps } from '@xyflow/react';
import { memo } from 'react';
import type { ToolView } from '../agentTools';
import type { ToolLight } from '../live';
import { Icon } from './Icon';

// A tool node is an agent's model or one entry of its tools array, drawn
// under the agent: not a RuleGo node (see agentTools.ts).
export interface ToolNodeData extends Record<string, unknown> {
  view: ToolView;
  light?: ToolLight;
  onOpenChain: (id: string) => void;
  onRemove: (v: ToolView) => void;
}

export type ToolFlowNode = Node<ToolNodeData, 'tool'>;

const KIND: Record<ToolView['kind'], string> = {
  builtin: 'built-in tool',
  rulechain: 'rule chain',
  agent: 'sub-agent',
  mcp: 'MCP server',
  model: 'model',
  unknown: 'tool',
};

function ToolNodeViewImpl({ data }: NodeProps<ToolFlowNode>) {
  const v = data.view;
  const icon = v.kind === 'unknown' ? 'builtin' : v.kind;
  const state = data.light === 'active' ? ', running' : data.light === 'failed' ? ', failed' : '';
  return (
    <div
      className={`tool-node kind-${v.kind}${data.light ? ` ${data.light}` : ''}`}
      data-testid={v.index < 0 ? `model-${v.agentId}` : `tool-${v.agentId}-${v.index}`}
      data-tool={v.index < 0 ? undefined : v.label}
      title={`${KIND[v.kind]} of ${v.agentId}: ${v.label} (${v.detail})${v.target ? '. Double-click to open its chain.' : ''}`}
      aria-label={`${KIND[v.kind]} ${v.label}${state}`}
    >
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div className="tool-node-head">
        <Icon name={icon} />
        <span className="tool-node-kind">{KIND[v.kind]}</span>
        {v.target && (
          <button type="button" className="nodrag" aria-label={`Open chain ${v.target}`} title={`Open chain ${v.target}`} onClick={() => data.onOpenChain(v.target!)}>
            <Icon name="open" size={12} />
          </button>
        )}
        {v.index >= 0 && (
          <button type="button" className="nodrag" aria-label={`Remove tool ${v.label}`} title="Remove this tool from the agent" onClick={() => data.onRemove(v)}>
            <Icon name="close" size={12} />
          </button>
        )}
      </div>
      <div className="tool-node-label">{v.label}</div>
      <div className="tool-node-detail">{v.detail}</div>
    </div>
  );
}

export const ToolNodeView = memo(ToolNodeViewImpl);
