import { describe, expect, it } from 'vitest';
import { apply, finalText, newRun, readSSE, type AGUIEvent } from './agui';
import { bars, turnDetail } from './ui/Timeline';

// A run in which the agent calls a builtin and a sub-agent; the sub-agent's
// events carry its subagentRunId, as the server sends them.
const events: AGUIEvent[] = [
  { type: 'RUN_STARTED', threadId: 't', runId: 'r', timestamp: 1000 },
  { type: 'STEP_STARTED', stepName: 'turn 1', timestamp: 1000 },
  { type: 'REASONING_MESSAGE_START', messageId: 'm0', timestamp: 1001 },
  { type: 'REASONING_MESSAGE_CONTENT', messageId: 'm0', delta: 'Let me look.', timestamp: 1002 },
  { type: 'REASONING_MESSAGE_END', messageId: 'm0', timestamp: 1003 },
  { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'read', timestamp: 1010, metadata: { toolType: 'builtin' } },
  { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"path":', timestamp: 1011 },
  { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '"a.txt"}', timestamp: 1012 },
  { type: 'TOOL_CALL_END', toolCallId: 'c1', timestamp: 1013 },
  { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'Helper', timestamp: 1014, metadata: { toolType: 'agent', targetId: 'helper' } },
  { type: 'TOOL_CALL_END', toolCallId: 'c2', timestamp: 1015 },
  { type: 'STEP_FINISHED', stepName: 'turn 1', timestamp: 1020, metadata: { step: 1, model: 'm', inputTokens: 10, outputTokens: 5 } },
  { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: 'x', content: 'no such file', role: 'tool', timestamp: 1030, metadata: { durationMs: 20, isError: true, errorKind: 'not_found' } },
  { type: 'SUBAGENT_STARTED', subagentRunId: 's1', name: 'Helper', parentToolCallId: 'c2', timestamp: 1031 },
  { type: 'STEP_STARTED', stepName: 'turn 1', subagentRunId: 's1', timestamp: 1032 },
  { type: 'TEXT_MESSAGE_START', messageId: 'sm', role: 'assistant', subagentRunId: 's1', timestamp: 1033 },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'sm', delta: 'helped', subagentRunId: 's1', timestamp: 1034 },
  { type: 'TEXT_MESSAGE_END', messageId: 'sm', subagentRunId: 's1', timestamp: 1035 },
  { type: 'STEP_FINISHED', stepName: 'turn 1', subagentRunId: 's1', timestamp: 1036, metadata: { inputTokens: 4, outputTokens: 2 } },
  { type: 'SUBAGENT_FINISHED', subagentRunId: 's1', timestamp: 1040 },
  { type: 'TOOL_CALL_RESULT', toolCallId: 'c2', messageId: 'y', content: 'helped', role: 'tool', timestamp: 1041, metadata: { durationMs: 27 } },
  { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant', timestamp: 1050 },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Done: ', timestamp: 1051 },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'helped.', timestamp: 1052 },
  { type: 'TEXT_MESSAGE_END', messageId: 'm1', timestamp: 1053 },
  { type: 'RUN_FINISHED', threadId: 't', runId: 'r', timestamp: 1060, outcome: { type: 'success' }, usage: [{ model: 'm', inputTokens: 30, outputTokens: 12, totalTokens: 42 }] },
];

describe('the run view', () => {
  const s = events.reduce((acc, e) => apply(acc, e, 0), newRun(1000));

  it('streams the answer and keeps reasoning apart', () => {
    expect(finalText(s)).toBe('Done: helped.');
    expect(s.runs.root.items[0]).toEqual({ kind: 'reasoning', id: 'm0', text: 'Let me look.', done: true });
    expect(s.runs.root.status).toBe('finished');
  });

  it('makes tool-call cards with arguments, result, type, duration and error', () => {
    const read = s.toolCalls['root/c1'];
    expect(read).toMatchObject({ name: 'read', args: '{"path":"a.txt"}', result: 'no such file', toolType: 'builtin', durationMs: 20, isError: true, errorKind: 'not_found' });
    expect(s.toolCalls['root/c2']).toMatchObject({ toolType: 'agent', targetId: 'helper', isError: false, subRuns: ['s1'] });
  });

  it('nests the sub-agent run in its tool call', () => {
    expect(s.runs.s1).toMatchObject({ name: 'Helper', status: 'finished', parentToolCall: 'root/c2' });
    expect(finalText({ ...s, root: 's1', runs: { ...s.runs, root: s.runs.s1 } })).toBe('helped');
  });

  it('counts tokens per turn, then takes the total the run reports', () => {
    const mid = events.slice(0, 19).reduce((acc, e) => apply(acc, e, 0), newRun(1000));
    expect(mid.usage).toEqual({ inputTokens: 14, outputTokens: 7, totalTokens: 21 });
    expect(s.usage).toEqual({ inputTokens: 30, outputTokens: 12, totalTokens: 42 });
  });

  it('lays the timeline out with the sub-agent under its call', () => {
    const list = bars(s, s.runs.root, 1060);
    expect(list.map((b) => [b.label, b.depth])).toEqual([
      ['turn 1 · m', 0],
      ['read', 0],
      ['Helper', 0],
      ['turn 1', 1],
    ]);
    expect(list[1].kind).toBe('error');
  });

  it('shows each turn\'s tokens, cost and time to first token, and the run\'s cost', () => {
    const run: AGUIEvent[] = [
      { type: 'RUN_STARTED', threadId: 't', runId: 'r', timestamp: 2000 },
      { type: 'STEP_STARTED', stepName: 'turn 1', timestamp: 2000 },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'read', timestamp: 2120 },
      { type: 'TOOL_CALL_END', toolCallId: 'c1', timestamp: 2130 },
      { type: 'STEP_FINISHED', stepName: 'turn 1', timestamp: 2140, metadata: { inputTokens: 300, outputTokens: 100, cost: '0.001', currency: 'USD' } },
      { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: 'x', timestamp: 2150 },
      { type: 'STEP_STARTED', stepName: 'turn 2', timestamp: 2150 },
      { type: 'REASONING_MESSAGE_CONTENT', messageId: 'm', delta: 'hmm', timestamp: 2190 },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'done', timestamp: 2300 },
      { type: 'STEP_FINISHED', stepName: 'turn 2', timestamp: 2310, metadata: { inputTokens: 41, outputTokens: 24, cost: '0.00002055', currency: 'USD' } },
      { type: 'RUN_FINISHED', outcome: { type: 'interrupt', interrupts: [] }, timestamp: 2320, metadata: { cost: '0.00102055', currency: 'USD' } },
      // A resumed run reports its own cost: the view adds them up.
      { type: 'RUN_STARTED', threadId: 't', runId: 'r2', timestamp: 3000 },
      { type: 'RUN_FINISHED', timestamp: 3010, metadata: { cost: '0.1', currency: 'USD' } },
    ];
    const v = run.reduce((acc, e) => apply(acc, e, 0), newRun(2000));
    expect(v.runs.root.steps.map((st) => [st.firstOutput, st.cost])).toEqual([
      [2120, '0.001'],
      [2190, '0.00002055'],
    ]);
    expect(bars(v, v.runs.root, 3010).filter((b) => b.kind === 'turn').map((b) => b.detail)).toEqual([
      '400 tok · 0.001 USD · TTFT 120 ms',
      '65 tok · 0.00002055 USD · TTFT 40 ms',
    ]);
    expect([v.cost, v.currency]).toEqual(['0.10102055', 'USD']);
    // Without a price table, nothing is made up.
    expect(turnDetail({ name: 'turn 1', start: 0 })).toBeUndefined();
    expect(s.cost).toBeUndefined();
  });

  it('marks a cancelled run and pending front-end tools', () => {
    const c = apply(newRun(0), { type: 'RUN_FINISHED', outcome: { type: 'cancelled' } }, 5);
    expect(c.runs.root.status).toBe('cancelled');
    const p = apply(newRun(0), { type: 'RUN_FINISHED', outcome: { type: 'success', pendingToolCallIds: ['f1'] } }, 5);
    expect(p.pendingToolCalls).toEqual(['f1']);
    const e = apply(newRun(0), { type: 'RUN_ERROR', message: 'no LLM configured' }, 5);
    expect(e.runs.root).toMatchObject({ status: 'error', error: 'no LLM configured' });
  });
});

describe('reading server-sent events', () => {
  it('parses data frames split across chunks, skipping comments', async () => {
    const text = ': heartbeat\n\ndata: {"type":"RUN_STARTED"}\n\ndata: {"type":"TEXT_MESSAGE_CONTENT","delta":"h\\u00e9"}\r\n\r\ndata: {"type":"RUN_FINISHED"}\n\n';
    const bytes = new TextEncoder().encode(text);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.slice(i, i + 7));
        c.close();
      },
    });
    const got: AGUIEvent[] = [];
    await readSSE(stream, (e) => got.push(e));
    expect(got.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'RUN_FINISHED']);
    expect(got[1].delta).toBe('hé');
  });
});

describe('a tool call’s duration', () => {
  it('is the server’s durationMs; a result with metadata but none took under a millisecond, not the time since the call was announced', () => {
    const fold = (events: AGUIEvent[]) => events.reduce((st, e) => apply(st, e, 0), newRun(0));
    const s = fold([
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'read', timestamp: 1000, metadata: { toolType: 'builtin' } },
      { type: 'TOOL_CALL_END', toolCallId: 'c1', timestamp: 3400 },
      { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: 'm', content: 'ok', timestamp: 3401, metadata: { toolType: 'builtin', nodeId: 'agent' } },
      { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'show_chart', timestamp: 4000 },
      { type: 'TOOL_CALL_RESULT', toolCallId: 'c2', messageId: 'n', content: 'ok', timestamp: 4250 },
    ]);
    expect(s.toolCalls['root/c1'].durationMs).toBe(0);
    expect(s.toolCalls['root/c2'].durationMs).toBe(250);
  });
});

describe('interrupts', () => {
  it('a paused run waits with its interrupts; the resumed run goes on in the same view, usage added up', () => {
    const fold = (events: AGUIEvent[], s = newRun(0)) => events.reduce((st, e, i) => apply(st, e, i), s);
    const paused = fold([
      { type: 'RUN_STARTED', threadId: 't', runId: 'r1' },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'send_email' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"to":"a@b.c"}' },
      { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      {
        type: 'RUN_FINISHED',
        threadId: 't',
        runId: 'r1',
        outcome: { type: 'interrupt', interrupts: [{ id: 'int-1', reason: 'tool_approval', toolCallId: 'c1', message: 'Approve send_email?' }] },
        usage: [{ model: 'm', inputTokens: 10, outputTokens: 2, totalTokens: 12 }],
      },
    ]);
    expect(paused.runs.root.status).toBe('waiting');
    expect(paused.interrupts.map((i) => i.id)).toEqual(['int-1']);
    const done = fold(
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r2' },
        { type: 'TOOL_CALL_RESULT', messageId: 'm1', toolCallId: 'c1', content: 'sent' },
        { type: 'TEXT_MESSAGE_START', messageId: 'a1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a1', delta: 'Sent.' },
        { type: 'TEXT_MESSAGE_END', messageId: 'a1' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r2', usage: [{ model: 'm', inputTokens: 5, outputTokens: 1, totalTokens: 6 }] },
      ],
      paused,
    );
    expect(done.interrupts).toEqual([]);
    expect(done.runs.root.status).toBe('finished');
    expect(done.toolCalls['root/c1'].result).toBe('sent');
    expect(finalText(done)).toBe('Sent.');
    expect(done.usage).toEqual({ inputTokens: 15, outputTokens: 3, totalTokens: 18 });
  });

  it('a sub-agent suspended by the pause waits, then goes on in the same card', () => {
    const fold = (events: AGUIEvent[], s = newRun(0)) => events.reduce((st, e) => apply(st, e, 0), s);
    const paused = fold([
      { type: 'RUN_STARTED', threadId: 't', runId: 'r1', timestamp: 10 },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'helper', metadata: { toolType: 'agent' }, timestamp: 11 },
      { type: 'TOOL_CALL_END', toolCallId: 'c1', timestamp: 12 },
      { type: 'SUBAGENT_STARTED', subagentRunId: 's1', name: 'helper', parentToolCallId: 'c1', timestamp: 13 },
      { type: 'TOOL_CALL_START', toolCallId: 's1:c9', toolCallName: 'lookup', subagentRunId: 's1', timestamp: 14 },
      { type: 'TOOL_CALL_END', toolCallId: 's1:c9', subagentRunId: 's1', timestamp: 15 },
      { type: 'SUBAGENT_FINISHED', subagentRunId: 's1', outcome: { type: 'suspended', interruptIds: ['int-1'] }, timestamp: 16 },
      { type: 'RUN_FINISHED', threadId: 't', runId: 'r1', outcome: { type: 'interrupt', interrupts: [{ id: 'int-1', reason: 'tool_approval', toolCallId: 's1:c9' }] }, timestamp: 17 },
    ]);
    expect(paused.runs.s1.status).toBe('waiting');
    const done = fold(
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r2', timestamp: 30 },
        { type: 'SUBAGENT_STARTED', subagentRunId: 's1', name: 'helper', parentToolCallId: 'c1', timestamp: 31 },
        { type: 'TOOL_CALL_RESULT', messageId: 'm1', toolCallId: 's1:c9', content: 'found', subagentRunId: 's1', timestamp: 32 },
        { type: 'SUBAGENT_FINISHED', subagentRunId: 's1', timestamp: 33 },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r2', timestamp: 34 },
      ],
      paused,
    );
    expect(done.runs.s1).toMatchObject({ status: 'finished', start: 13, end: 33 });
    expect(done.toolCalls['root/c1'].subRuns).toEqual(['s1']);
  });
});
