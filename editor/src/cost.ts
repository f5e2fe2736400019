// Costs arrive as exact decimal strings (the server's ledger counts in
// nano-units of the currency); they are added here as integers of nano-
// units too, never as floating point, so the sum shown is the server's.

const NANOS = 1_000_000_000n;

// toNanos reads a decimal amount ("0.00002055"); null when it is not one.
export function toNanos(s: string): bigint | null {
  const m = /^(\d*)(?:\.(\d{0,9}))?$/.exec(s.trim());
  if (!m || (m[1] === '' && (m[2] ?? '') === '')) return null;
  return BigInt(m[1] || '0') * NANOS + BigInt((m[2] ?? '').padEnd(9, '0') || '0');
}

// fromNanos writes an amount as a decimal without trailing zeros.
export function fromNanos(n: bigint): string {
  const whole = n / NANOS;
  const frac = (n % NANOS).toString().padStart(9, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}

// addCost adds two decimal amounts exactly; an amount that is not one
// leaves the other.
export function addCost(a: string | undefined, b: string | undefined): string | undefined {
  const x = a === undefined ? null : toNanos(a);
  const y = b === undefined ? null : toNanos(b);
  if (x === null) return y === null ? a : b;
  if (y === null) return a;
  return fromNanos(x + y);
}

// showCost is an amount for people: the exact figure, with its currency.
export function showCost(amount: string, currency?: string): string {
  return currency ? `${amount} ${currency}` : amount;
}
