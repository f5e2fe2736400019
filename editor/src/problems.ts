// Server validation problems carry JSON paths into the DSL
// ("metadata.nodes[2].configuration.tools[0].config.mode"); the editor
// shows each on the node and the field it points to.

import type { Problem } from './types';

export interface Located {
  problem: Problem;
  // node is the index in metadata.nodes, connection in metadata.connections.
  node?: number;
  connection?: number;
  // field is the rest of the path after the node, such as
  // "configuration.tools[0].config.mode".
  field?: string;
}

export function locate(p: Problem): Located {
  const n = /^metadata\.nodes\[(\d+)\]\.?(.*)$/.exec(p.path);
  if (n) return { problem: p, node: Number(n[1]), field: deeper(n[2], p.message) || undefined };
  const c = /^metadata\.connections\[(\d+)\]/.exec(p.path);
  if (c) return { problem: p, connection: Number(c[1]) };
  return { problem: p };
}

// under returns the problems whose field path starts with prefix (a field
// name or a path such as "configuration.tools[1]"), with the prefix removed.
export function under(list: Located[], prefix: string): Located[] {
  return list
    .filter((l) => l.field !== undefined && (l.field === prefix || l.field.startsWith(prefix + '.') || l.field.startsWith(prefix + '[')))
    .map((l) => ({ ...l, field: l.field!.slice(prefix.length).replace(/^\./, '') }));
}

// messageAt joins the messages of the problems at exactly this field.
export function messageAt(list: Located[], field: string): string | null {
  const hits = list.filter((l) => l.field === field || (l.field ?? '').startsWith(field + '.') || (l.field ?? '').startsWith(field + '['));
  return hits.length ? hits.map((h) => h.problem.message).join('; ') : null;
}

// deeper follows a JSON Schema error's pointer into the value the path
// names: "config" with "at /maxReadLines: got string" is the field
// "config.maxReadLines".
function deeper(field: string, message: string): string {
  const m = /^at \/([^:\s]+):/.exec(message);
  if (!m) return field;
  const rest = m[1].split('/').map((seg) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg.replace(/~1/g, '/').replace(/~0/g, '~')}`)).join('');
  return field ? field + rest : rest.replace(/^\./, '');
}
