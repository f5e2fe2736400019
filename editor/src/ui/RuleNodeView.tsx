import { Handle, Position, type NodeProps, type Node } from '@xyflow/react';
import { memo } from 'react';

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
}

export type RuleFlowNode = Node<RuleNodeData, 'rule'>;

function RuleNodeViewImpl({ data, selected }: NodeProps<RuleFlowNode>) {
  const cls = ['rule-node', data.agent ? 'agent' : '', data.active ? 'active' : '', data.visited ? 'visited' : '', data.failed ? 'failed' : '', selected ? 'selected' : '', data.problems ? 'invalid' : '']
    .filter(Boolean)
    .join(' ');
  return (
    <div className={cls} data-node-id={data.id} data-testid={`node-${data.id}`}>
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
    </div>
  );
}

export const RuleNodeView = memo(RuleNodeViewImpl);
