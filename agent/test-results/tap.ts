// TAP → test cases, with tap-parser. Every test point of every subtest is read; a point that
// stands for a subtest (other points below it) is not a test of its own. Subtest depth is bounded
// before parsing (indentation), since each level is a parser of its own.
import { Parser, type Result } from 'tap-parser';
import type { TestCase } from '../../schemas/wire/agent.ts';
import { ResultFileError, type ParseSink } from './junit.ts';
import { clip, firstLines, TEST_LIMITS } from './limits.ts';

const INDENT = /^( *)/;

function diagText(diag: unknown): string {
  if (diag === null || diag === undefined) return '';
  if (typeof diag === 'string') return diag;
  try {
    return JSON.stringify(diag, null, 2) ?? '';
  } catch {
    return '';
  }
}

function messageOf(result: Result): string {
  const diag = result.diag as Record<string, unknown> | null;
  const m = diag?.['message'] ?? diag?.['error'];
  if (typeof m === 'string' && m.trim() !== '') return m;
  return result.name || 'not ok';
}

export function parseTap(source: string, sink: ParseSink): void {
  for (const line of source.split('\n', 2_000_000)) {
    const indent = INDENT.exec(line)![1]!.length;
    if (indent > TEST_LIMITS.maxDepth * 4) throw new ResultFileError(`nests subtests deeper than ${TEST_LIMITS.maxDepth} levels`);
  }
  const points: Result[] = [];
  const watch = (parser: Parser) => {
    parser.on('assert', (r: Result) => {
      if (points.length <= TEST_LIMITS.maxTests) points.push(r);
    });
    parser.on('child', (child: Parser) => watch(child));
  };
  const root = new Parser();
  watch(root);
  try {
    root.end(source);
  } catch (error) {
    throw new ResultFileError(`is not readable TAP: ${clip(error instanceof Error ? error.message : String(error), 300)}`);
  }
  if (points.length === 0) throw new ResultFileError('has no test points: not a TAP file, or an empty one');
  const parents = new Set<string>();
  for (const p of points) {
    const cut = p.fullname.lastIndexOf(' > ');
    if (cut > 0) parents.add(p.fullname.slice(0, cut));
  }
  for (const p of points) {
    if (parents.has(p.fullname)) continue;
    const cut = p.fullname.lastIndexOf(' > ');
    const suite = cut > 0 ? p.fullname.slice(0, cut) : '';
    const name = (cut > 0 ? p.fullname.slice(cut + 3) : p.fullname).trim() || `#${p.id ?? '?'}`;
    const status = p.skip !== false || p.todo !== false ? 'skipped' : p.ok ? 'passed' : 'failed';
    const diag = diagText(p.diag);
    const time = typeof p.time === 'number' && Number.isFinite(p.time) && p.time >= 0 ? Math.round(p.time) : undefined;
    const at = (p.diag as Record<string, unknown> | null)?.['at'] as Record<string, unknown> | undefined;
    const file = typeof at?.['fileName'] === 'string' ? at['fileName'] : undefined;
    const test: TestCase = {
      suite: clip(suite, TEST_LIMITS.suiteLength),
      name: clip(name, TEST_LIMITS.nameLength),
      status,
      ...(file === undefined ? {} : { file: clip(file, TEST_LIMITS.fileLength) }),
      ...(time === undefined ? {} : { durationMs: Math.min(time, 2_147_483_647) }),
      ...(status === 'failed' ? { message: clip(messageOf(p), TEST_LIMITS.messageLength) } : {}),
      ...(status === 'failed' && diag !== '' ? { output: firstLines(diag, TEST_LIMITS.outputLines, TEST_LIMITS.outputLength) } : {}),
    };
    if (!sink.add(test)) return;
  }
}
