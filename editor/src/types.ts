// The shapes the editor reads and writes: RuleGo's chain DSL and the
// server's API (see the README's API reference). Unknown keys are kept
// everywhere, so a chain survives a round trip through the editor.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export interface RuleNode {
  id?: string;
  type: string;
  name?: string;
  debugMode?: boolean;
  configuration?: JsonObject;
  additionalInfo?: JsonObject;
  [k: string]: Json | undefined;
}

export interface RuleConnection {
  fromId: string;
  toId: string;
  type: string;
  [k: string]: Json | undefined;
}

export interface ChainDSL {
  ruleChain: {
    id?: string;
    name?: string;
    root?: boolean;
    disabled?: boolean;
    additionalInfo?: JsonObject;
    [k: string]: Json | undefined;
  };
  metadata: {
    firstNodeIndex?: number;
    nodes: RuleNode[];
    connections: RuleConnection[];
    [k: string]: Json | undefined | RuleNode[] | RuleConnection[];
  };
  [k: string]: Json | undefined | object;
}

export interface ChainInfo {
  id: string;
  name: string;
  description?: string;
  root?: boolean;
  disabled?: boolean;
  isAgent?: boolean;
  inputSchema?: JsonObject;
  file?: string;
  error?: string;
  /** The endpoints the chain declares and the server runs. */
  endpoints?: EndpointInfo[];
}

export interface EndpointInfo {
  id: string;
  type: string;
  address?: string;
  routes?: string[];
}

export interface Rule {
  required?: boolean;
  message?: string;
}

export interface ComponentFormField {
  name: string;
  type: string;
  defaultValue?: Json;
  label?: string;
  desc?: string;
  rules?: Rule[] | null;
  fields?: ComponentFormField[] | null;
  component?: { type?: string; options?: { label: string; value: Json }[] } | null;
  required?: boolean;
}

export interface ComponentForm {
  type: string;
  category?: string;
  label?: string;
  desc?: string;
  fields?: ComponentFormField[] | null;
  relationTypes?: string[] | null;
  componentKind?: string;
  disabled?: boolean;
}

export interface JSONSchema {
  type?: string | string[];
  description?: string;
  default?: Json;
  properties?: Record<string, JSONSchema>;
  required?: string[];
  items?: JSONSchema;
  enum?: Json[];
  additionalProperties?: boolean | JSONSchema;
  minimum?: number;
  maximum?: number;
}

export interface ToolTypeInfo {
  type: string;
  description?: string;
  // `ruleagent tools --json` prints a JSON Schema object; the API contract
  // also allows a plain list of fields.
  fields?: JSONSchema | { name: string; type?: string; description?: string; required?: boolean }[];
}

export interface BuiltinInfo {
  name: string;
  description?: string;
  configSchema?: JSONSchema;
  argsSchema?: JSONSchema;
}

export interface Components {
  nodes: ComponentForm[];
  endpoints?: ComponentForm[];
  toolTypes?: ToolTypeInfo[];
  builtins?: BuiltinInfo[];
}

export interface Problem {
  path: string;
  message: string;
}

export interface DiscoveredTool {
  name: string;
  remoteName?: string;
  description?: string;
  inputSchema?: JsonObject;
}

// RunBody is POST /api/v1/chains/{id}/run's body: input is text or a JSON
// object (the message data); metadata values that are not strings arrive
// as their JSON.
export interface RunBody {
  input: Json;
  metadata?: JsonObject;
  runId?: string;
  threadId?: string;
  msgType?: string;
}

export interface RunEnd {
  data: string;
  metadata: Record<string, string>;
  relation: string;
  error?: string;
}

// RunAnswer is the chain's final message, and how the run ended.
export interface RunAnswer {
  runId: string;
  threadId: string;
  outcome: 'success' | 'error' | 'cancelled' | 'interrupt';
  data: string;
  metadata: Record<string, string>;
  relation?: string;
  error?: string;
  errorCode?: string;
  usage?: JsonObject[];
  interrupts?: JsonObject[];
  // ends lists every end of a chain that ended more than once.
  ends?: RunEnd[];
}
