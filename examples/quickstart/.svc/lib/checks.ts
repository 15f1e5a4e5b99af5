// The example's "test suite": plain functions the ci workflow calls, one per matrix part.
import { readFileSync } from 'node:fs';
import { greet } from './greeting.ts';

export const PARTS = ['unit', 'lint'] as const;

function unit(): string[] {
  const cases: Array<[string, string]> = [
    ['svc', 'Hello, svc!'],
    ['  padded  ', 'Hello, padded!'],
    ['', 'Hello, world!'],
  ];
  return cases.map(([input, expected]) => {
    const got = greet(input);
    if (got !== expected) throw new Error(`greet(${JSON.stringify(input)}) returned ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
    return `ok greet(${JSON.stringify(input)}) = ${JSON.stringify(got)}`;
  });
}

function lint(): string[] {
  const file = new URL('./greeting.ts', import.meta.url);
  const lines = readFileSync(file, 'utf8').split('\n');
  const bad = lines.flatMap((line, i) => (/[ \t]$/.test(line) ? [`greeting.ts:${i + 1} has trailing whitespace`] : []));
  if (bad.length > 0) throw new Error(bad.join('; '));
  return [`ok greeting.ts: ${lines.length} lines, no trailing whitespace`];
}

/** Runs one part and returns its report lines; throws on the first failure. */
export function check(part: string): string[] {
  if (part === 'unit') return unit();
  if (part === 'lint') return lint();
  throw new Error(`unknown check part ${JSON.stringify(part)}`);
}
