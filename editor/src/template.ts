// Splits a RuleGo template (${metadata.x}, ${vars.x}, ${global.x}, ${msg.x},
// ${data}, ...) into plain text and variables, for highlighting.

export interface Piece {
  text: string;
  variable: boolean;
  // known is false for a variable of a namespace RuleGo does not fill in.
  known: boolean;
}

const VAR = /\$\{([^}]*)\}/g;
const NAMESPACES = /^\s*(metadata|vars|global|msg|msgType|data|id|ts|type|dataType|secrets)(\.[^}]*)?\s*$/;

export function splitTemplate(s: string): Piece[] {
  const out: Piece[] = [];
  let last = 0;
  for (const m of s.matchAll(VAR)) {
    if (m.index! > last) out.push({ text: s.slice(last, m.index), variable: false, known: true });
    out.push({ text: m[0], variable: true, known: NAMESPACES.test(m[1]) });
    last = m.index! + m[0].length;
  }
  if (last < s.length) out.push({ text: s.slice(last), variable: false, known: true });
  return out;
}

export function variablesOf(s: string): string[] {
  return splitTemplate(s).filter((p) => p.variable).map((p) => p.text);
}
