import { describe, expect, it } from 'vitest';
import { addCost, fromNanos, showCost, toNanos } from './cost';

describe('costs', () => {
  it('reads and writes exact decimal amounts', () => {
    expect(toNanos('0.00002055')).toBe(20550n);
    expect(toNanos('3')).toBe(3_000_000_000n);
    expect(toNanos('.5')).toBe(500_000_000n);
    expect(toNanos('1e-3')).toBeNull();
    expect(toNanos('')).toBeNull();
    expect(fromNanos(20550n)).toBe('0.00002055');
    expect(fromNanos(2_500_000_000n)).toBe('2.5');
    expect(fromNanos(0n)).toBe('0');
  });

  it('adds without floating-point drift', () => {
    // 0.1 + 0.2 is 0.30000000000000004 in floating point.
    expect(addCost('0.1', '0.2')).toBe('0.3');
    let total: string | undefined;
    for (let i = 0; i < 1000; i++) total = addCost(total, '0.00002055');
    expect(total).toBe('0.02055');
    expect(addCost(undefined, '1')).toBe('1');
    expect(addCost('1', 'not a number')).toBe('1');
    expect(showCost('0.02055', 'USD')).toBe('0.02055 USD');
  });
});
