// The relation types a connection from a node can take: the component's
// own, the cases of a switch, the intents of ai/intent, and whatever the
// chain already uses from it.

import type { ComponentForm, RuleNode } from './types';
import { isObject } from './dsl';

export function relationOptions(form: ComponentForm | undefined, node: RuleNode, used: string[] = []): string[] {
  const out: string[] = [...(form?.relationTypes ?? [])];
  const cases = node.configuration?.cases;
  if (Array.isArray(cases)) {
    for (const c of cases) if (isObject(c) && typeof c.then === 'string') out.push(c.then);
    out.push('Default');
  }
  if (node.type === 'jsSwitch' || node.type === 'msgTypeSwitch') out.push('Default');
  // ai/intent leaves by the relation named after each intent.
  const intents = node.configuration?.intents;
  if (node.type === 'ai/intent' && Array.isArray(intents)) {
    const names = intents.flatMap((it) => (isObject(it) && typeof it.name === 'string' && it.name ? [it.name] : []));
    out.unshift(...names);
  }
  out.push(...used);
  // An end node tells nothing; a node the server does not know may tell anything.
  if (!out.length && (!form || form.relationTypes === null)) out.push('Success', 'Failure');
  return [...new Set(out)];
}
