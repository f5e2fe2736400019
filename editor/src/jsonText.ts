// JSON typed by a person: parsed with JSON.parse, and when that fails the
// text is scanned again to say what is wrong and where (line and column),
// the same in every browser.

import type { Json } from './types';

export type Parsed = { ok: true; value: Json } | { ok: false; message: string; line: number; column: number; offset: number };

export function parseJSON(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text) as Json };
  } catch (e) {
    const found = new Scanner(text).error() ?? { offset: 0, message: (e as Error).message };
    const before = text.slice(0, found.offset);
    const line = before.split('\n').length;
    const column = found.offset - before.lastIndexOf('\n');
    return { ok: false, message: `${found.message} (line ${line}, column ${column})`, line, column, offset: found.offset };
  }
}

class Fail {
  constructor(
    readonly offset: number,
    readonly message: string,
  ) {}
}

// Scanner follows RFC 8259's grammar and stops at the first error.
class Scanner {
  private i = 0;
  constructor(private s: string) {}

  error(): { offset: number; message: string } | null {
    try {
      this.value();
      this.space();
      if (this.i < this.s.length) this.fail(`unexpected ${this.here()} after the value`);
      return null;
    } catch (e) {
      if (e instanceof Fail) return e;
      throw e;
    }
  }

  private fail(message: string): never {
    throw new Fail(this.i, message);
  }

  private here(): string {
    return this.i >= this.s.length ? 'end of text' : JSON.stringify(this.s[this.i]);
  }

  private space() {
    while (this.i < this.s.length && ' \t\n\r'.includes(this.s[this.i])) this.i++;
  }

  private value() {
    this.space();
    const c = this.s[this.i];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    for (const word of ['true', 'false', 'null']) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return;
      }
    }
    this.fail(this.i >= this.s.length ? 'the text ends where a value should be' : `expected a value, found ${this.here()}`);
  }

  private object() {
    this.i++;
    this.space();
    if (this.s[this.i] === '}') return void this.i++;
    for (;;) {
      this.space();
      if (this.s[this.i] !== '"') this.fail(`expected a property name in double quotes, found ${this.here()}`);
      this.string();
      this.space();
      if (this.s[this.i] !== ':') this.fail(`expected ':' after the property name, found ${this.here()}`);
      this.i++;
      this.value();
      this.space();
      if (this.s[this.i] === ',') {
        this.i++;
        continue;
      }
      if (this.s[this.i] === '}') return void this.i++;
      this.fail(`expected ',' or '}' after a property, found ${this.here()}`);
    }
  }

  private array() {
    this.i++;
    this.space();
    if (this.s[this.i] === ']') return void this.i++;
    for (;;) {
      this.value();
      this.space();
      if (this.s[this.i] === ',') {
        this.i++;
        continue;
      }
      if (this.s[this.i] === ']') return void this.i++;
      this.fail(`expected ',' or ']' after an element, found ${this.here()}`);
    }
  }

  private string() {
    this.i++;
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === '"') return void this.i++;
      if (c < ' ') this.fail('a string cannot hold a line break or control character (write \\n)');
      if (c === '\\') {
        const e = this.s[this.i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.s.slice(this.i + 2, this.i + 6))) this.fail('\\u needs four hex digits');
          this.i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) this.fail(`invalid escape \\${e ?? ''}`);
        this.i += 2;
        continue;
      }
      this.i++;
    }
    this.fail('the string is not closed');
  }

  private number() {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.s.slice(this.i));
    if (!m) this.fail('invalid number');
    this.i += m[0].length;
  }
}
