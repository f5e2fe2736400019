// Undo and redo over immutable documents. Edits that carry the same merge
// tag one after the other (typing in one field, one drag) make one step.

export interface History<T> {
  past: T[];
  present: T;
  future: T[];
  tag: string | null;
}

const LIMIT = 200;

export function start<T>(present: T): History<T> {
  return { past: [], present, future: [], tag: null };
}

export function push<T>(h: History<T>, next: T, tag: string | null = null): History<T> {
  if (next === h.present) return h;
  if (tag !== null && tag === h.tag) return { ...h, present: next, future: [] };
  return { past: [...h.past, h.present].slice(-LIMIT), present: next, future: [], tag };
}

export function undo<T>(h: History<T>): History<T> {
  if (!h.past.length) return h;
  return { past: h.past.slice(0, -1), present: h.past[h.past.length - 1], future: [h.present, ...h.future], tag: null };
}

export function redo<T>(h: History<T>): History<T> {
  if (!h.future.length) return h;
  return { past: [...h.past, h.present], present: h.future[0], future: h.future.slice(1), tag: null };
}
