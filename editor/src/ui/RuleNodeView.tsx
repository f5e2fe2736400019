import { Handle, Position, type NodeProps, type Node } from '@xyflow/react';
import { memo, useState } from 'react';
import { TOOL_TYPES, type ToolType } from '../tools';
import { Icon } from './Icon';

export interface RuleNodeData extends Record<string, unknown> {
  name: string;
  type: string;
  id: string;
  first: boolean;
  agent: boolean;
  tools: number;
  active: boolean;
  visited: boolean;
  failed: boolean;
  problems: number;
  // outputs is false for nodes that tell no relation (end).
  outputs: boolean;
  // onAddTool adds a tool of that type to an agent node.
  onAddTool?: (type: ToolType) => void;
}

const ADD: Record<ToolType, string> = { builtin: 'Built-in tool', rulechain: 'Rule chain', agent: 'Sub-agent', mcp: 'MCP server' };

export type RuleFlowNode = Node<RuleNodeData, 'rule'>;

function RuleNodeViewImpl({ data, selected }: NodeProps<RuleFlowNode>) {
  const [adding, setAdding] = useState(false);
  const cls = ['rule-node', data.agent ? 'agent' : '', data.active ? 'active' : '', data.visited ? 'visited' : '', data.failed ? 'failed' : '', selected ? 'selected' : '', data.problems ? 'invalid' : '']
    .filter(Boolean)
    .join(' ');
  return (
    <div className={cls} data-node-id={data.id} data-testid={`node-${data.id}`} data-agent={data.agent ? data.id : undefined}>
      <Handle type="target" position={Position.Left} aria-label={`Input of ${data.name || data.id}`} />
      <div className="rule-node-head">
        {data.first && <span className="badge start" title="First node: messages enter here">start</span>}
        <span className="rule-node-type">{data.type}</span>
        {data.problems > 0 && (
          <span className="badge problem" title={`${data.problems} problem(s) from the server`}>
            {data.problems}
          </span>
        )}
      </div>
      <div className="rule-node-name">{data.name || data.id}</div>
      {data.agent && <div className="rule-node-sub">{data.tools === 1 ? '1 tool' : `${data.tools} tools`}</div>}
      {data.outputs && <Handle type="source" position={Position.Right} aria-label={`Output of ${data.name || data.id}`} />}
      {data.agent && (
        <>
          {/* Where the model and tools hang: not a RuleGo connection. */}
          <Handle type="source" id="tools" position={Position.Bottom} isConnectable={false} className="tools-handle" />
          <div
            className="add-tool-wrap nodrag"
            // The menu closes when the focus leaves it or on Escape.
            onBlur={(e) => !e.currentTarget.contains(e.relatedTarget) && setAdding(false)}
            onKeyDown={(e) => e.key === 'Escape' && (e.stopPropagation(), setAdding(false))}
          >
            <button type="button" className="add-tool" aria-label={`Add a tool to ${data.name || data.id}`} aria-expanded={adding} title="Add a tool" onClick={() => setAdding((a) => !a)}>
              <Icon name="plus" size={12} />
            </button>
            {adding && (
              <div className="add-tool-menu" role="menu" aria-label="Tool type">
                {TOOL_TYPES.map((t) => (
                  <button
                    key={t}
                    type="button"
                    role="menuitem"
                    data-add-tool-type={t}
                    onClick={() => {
                      setAdding(false);
                      data.onAddTool?.(t);
                    }}
                  >
                    {ADD[t]}
                  </button>
                ))}
              </div>
            )}
          </div>
        </>
      )}
    </div>
  );
}

export const RuleNodeView = memo(RuleNodeViewImpl);
