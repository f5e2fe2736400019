import { describe, expect, it } from 'vitest';
import { parseJSON } from './jsonText';
import { checkForm, newMessageRuns, pretty, runBody } from './messageRun';

describe('JSON typed by a person', () => {
  const cases: [string, string, number, number][] = [
    ['{"userId": alice}', 'expected a value, found "a"', 1, 12],
    ['{"a": 1,}', 'expected a property name in double quotes, found "}"', 1, 9],
    ['{\n  "a": 1\n  "b": 2\n}', `expected ',' or '}' after a property, found "\\""`, 3, 3],
    ["{'a': 1}", 'expected a property name in double quotes, found "\'"', 1, 2],
    ['{"a": [1, 2}', `expected ',' or ']' after an element, found "}"`, 1, 12],
    ['{"a": "line\nbreak"}', 'a string cannot hold a line break or control character (write \\n)', 1, 12],
    ['{"a": 01}', `expected ',' or '}' after a property, found "1"`, 1, 8],
    ['{"a": 1} x', 'unexpected "x" after the value', 1, 10],
    ['{"a": "\\x"}', 'invalid escape \\x', 1, 8],
    ['{"a":', 'the text ends where a value should be', 1, 6],
    ['{"a": "open', 'the string is not closed', 1, 12],
  ];
  for (const [text, message, line, column] of cases) {
    it(`says where ${JSON.stringify(text)} is wrong`, () => {
      const p = parseJSON(text);
      expect(p.ok).toBe(false);
      if (p.ok) return;
      expect(p.message).toBe(`${message} (line ${line}, column ${column})`);
      expect([p.line, p.column]).toEqual([line, column]);
    });
  }
  it('parses what JSON.parse parses', () => {
    expect(parseJSON(' {"a": [1, -2.5e3, true, null, "\\u00e9"]} ')).toEqual({ ok: true, value: { a: [1, -2500, true, null, 'é'] } });
  });
});

describe('the message form', () => {
  it('starts from the chain’s input schema', () => {
    const r = newMessageRuns({ type: 'object', properties: { orderId: { type: 'string' }, qty: { type: 'integer' }, express: { type: 'boolean' }, tags: { type: 'array' }, kind: { enum: ['a', 'b'] } } });
    expect(JSON.parse(r.form.data)).toEqual({ orderId: '', qty: 0, express: false, tags: [], kind: 'a' });
    expect(r.form.metadata).toBe('{}');
    expect(JSON.parse(newMessageRuns().form.data)).toEqual({});
  });

  it('refuses what the server would not take as message data and metadata, before sending', () => {
    expect(checkForm({ data: '{"orderId": "A-1"}', dataAs: 'json', metadata: '' })).toEqual({});
    expect(checkForm({ data: '[1]', dataAs: 'json', metadata: '' }).data).toMatch(/must be a JSON object/);
    expect(checkForm({ data: 'hello', dataAs: 'json', metadata: '' }).data).toMatch(/^Invalid JSON: .*line 1, column 1/);
    expect(checkForm({ data: 'hello', dataAs: 'text', metadata: '' })).toEqual({});
    expect(checkForm({ data: ' ', dataAs: 'text', metadata: '' }).data).toBe('Type the message text.');
    expect(checkForm({ data: '{}', dataAs: 'json', metadata: '{"userId": alice}' }).metadata).toBe('Invalid JSON: expected a value, found "a" (line 1, column 12)');
    expect(checkForm({ data: '{}', dataAs: 'json', metadata: '"alice"' }).metadata).toMatch(/must be a JSON object/);
  });

  it('sends the data as JSON or text, and the metadata only when there is some', () => {
    expect(runBody({ data: '{"orderId": "A-1"}', dataAs: 'json', metadata: '{"userId": "alice", "n": 2}' }, 'run-1')).toEqual({
      input: { orderId: 'A-1' },
      metadata: { userId: 'alice', n: 2 },
      runId: 'run-1',
    });
    expect(runBody({ data: '{"a": 1}', dataAs: 'text', metadata: '{}' }, 'run-2')).toEqual({ input: '{"a": 1}', runId: 'run-2' });
  });

  it('shows JSON data indented and text as it is', () => {
    expect(pretty('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(pretty('hello {')).toBe('hello {');
  });
});
