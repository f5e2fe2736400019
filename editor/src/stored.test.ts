import { describe, expect, it } from 'vitest';
import { finalText } from './agui';
import { importChain } from './dsl';
import { forkPoints, forkRequest, nodeLights, runState, type StoredRecord } from './stored';
import desk from './testdata/desk.json';
import recorded from './testdata/record.json';
import { bars } from './ui/Timeline';

// record.json is `ruleagent runs export` of a run of desk.json served with
// the recording on: the agent calls a rule-chain tool (lookup) and a
// sub-agent (writer) at once, then answers with their results.
const rec = recorded as unknown as StoredRecord;

describe('a recorded run after the fact', () => {
  it('folds its events into the run view: answer, tool calls, the sub-agent, tokens', () => {
    const s = runState(rec);
    expect(s.runs.root.status).toBe('finished');
    expect(finalText(s)).toBe('Checking.Done: {"found":"A-1","stock":7} | Dear customer, A-1 ships Monday');
    const calls = Object.values(s.toolCalls);
    expect(calls.map((c) => c.name).sort()).toEqual(['lookup', 'writer']);
    const writer = calls.find((c) => c.name === 'writer')!;
    expect(writer.subRuns).toHaveLength(1);
    expect(finalText({ ...s, root: writer.subRuns[0], runs: { ...s.runs, root: s.runs[writer.subRuns[0]] } })).toBe('Dear customer, A-1 ships Monday');
    expect(s.usage.totalTokens).toBe(rec.meta.inputTokens + rec.meta.outputTokens);
  });

  it('lays its timeline out at the times it ran', () => {
    const s = runState(rec);
    const root = s.runs.root;
    expect(root.start).toBe(Date.parse(rec.meta.startedAt));
    const list = bars(s, root, root.end!);
    expect(list.filter((b) => b.kind === 'turn' && b.depth === 0)).toHaveLength(2);
    expect(list.some((b) => b.kind === 'turn' && b.depth === 1)).toBe(true);
    for (const b of list) expect(b.end).toBeGreaterThanOrEqual(b.start);
  });

  it('lights the steps of its own chain on the canvas, not those of the chains its tools ran', () => {
    const l = nodeLights(rec, importChain(desk));
    expect(l.runId).toBe('run-desk-1');
    expect([...l.visited]).toEqual(['agent']);
    expect(l.active.size).toBe(0);
    expect(l.failed.size).toBe(0);
    expect(l.steps).toEqual([expect.objectContaining({ nodeId: 'agent', relation: 'Success', done: true })]);
  });

  it('offers each LLM step to fork from, the run’s own agent first', () => {
    const points = forkPoints(rec);
    expect(points.map((p) => [p.agent, p.step, p.sub])).toEqual([
      ['desk:agent', 1, false],
      ['desk:agent', 2, false],
      ['desk:agent/call_llmtest000002>writer:agent', 1, true],
    ]);
    const turn2 = points[1];
    expect(turn2.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(turn2.messages[0].content).toBe('You run the order desk.');
  });

  it('sends only what a fork changed', () => {
    const turn2 = forkPoints(rec)[1];
    const lookup = turn2.messages.find((m) => m.role === 'tool' && m.content.includes('stock'))!;
    const same = Object.fromEntries(turn2.messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId!, m.content]));
    expect(forkRequest(turn2, { systemPrompt: 'You run the order desk.', toolResults: same })).toEqual({ step: 2, agent: 'desk:agent', edits: {}, stream: true });
    expect(forkRequest(turn2, { systemPrompt: 'Be brief.', model: 'gpt-4o', toolResults: { ...same, [lookup.toolCallId!]: '{"stock":0}' } })).toEqual({
      step: 2,
      agent: 'desk:agent',
      model: 'gpt-4o',
      stream: true,
      edits: { systemPrompt: 'Be brief.', toolResults: [{ toolCallId: lookup.toolCallId!, content: '{"stock":0}' }] },
    });
  });
});
