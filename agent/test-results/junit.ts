// JUnit XML → test cases. fast-xml-parser reads the document; a DOCTYPE (the door to external
// and expanding entities) is refused before it is parsed, nesting is bounded by the parser's
// maxNestedTags, and every field is clipped to the limits. `<testsuites>` or a bare `<testsuite>`
// at the root, suites nested in suites, `<failure>`, `<error>`, `<skipped>` per case.
import { XMLParser } from 'fast-xml-parser';
import type { TestCase } from '../../schemas/wire/agent.ts';
import { clip, firstLines, secondsToMs, TEST_LIMITS } from './limits.ts';

export class ResultFileError extends Error {}

const ARRAYS = new Set(['testsuites', 'testsuite', 'testcase', 'failure', 'error', 'skipped', 'system-out', 'system-err', 'property']);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  textNodeName: '#text',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  processEntities: true,
  htmlEntities: false,
  maxNestedTags: TEST_LIMITS.maxDepth,
  isArray: (name) => ARRAYS.has(name),
});

type Node = Record<string, unknown>;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(text).join('\n');
  if (typeof value === 'object' && value !== null) {
    const t = (value as Node)['#text'];
    return typeof t === 'string' ? t : '';
  }
  return '';
}

function attr(node: Node, name: string): string | undefined {
  const v = node[name];
  return typeof v === 'string' ? v : undefined;
}

function nodes(value: unknown): Node[] {
  return Array.isArray(value) ? value.filter((v): v is Node => typeof v === 'object' && v !== null) : [];
}

export interface ParseSink {
  add(test: TestCase): boolean;
}

function testCase(node: Node, suite: string, sink: ParseSink): boolean {
  const name = attr(node, 'name')?.trim() || '(unnamed)';
  const classname = attr(node, 'classname')?.trim();
  const failure = nodes(node['failure'])[0] ?? (Array.isArray(node['failure']) && node['failure'].length > 0 ? {} : undefined);
  const error = nodes(node['error'])[0] ?? (Array.isArray(node['error']) && node['error'].length > 0 ? {} : undefined);
  const skipped = Array.isArray(node['skipped']) && node['skipped'].length > 0;
  const status = failure !== undefined ? 'failed' : error !== undefined ? 'errored' : skipped ? 'skipped' : 'passed';
  const problem = failure ?? error;
  const body = problem === undefined ? '' : text(problem);
  const message = problem === undefined ? undefined : (attr(problem, 'message') ?? body.split(/\r?\n/).find((l) => l.trim() !== '') ?? status);
  const file = attr(node, 'file');
  const durationMs = secondsToMs(attr(node, 'time'));
  return sink.add({
    suite: clip(suite || classname || '', TEST_LIMITS.suiteLength),
    name: clip(name, TEST_LIMITS.nameLength),
    ...(file === undefined || file === '' ? {} : { file: clip(file, TEST_LIMITS.fileLength) }),
    status,
    ...(durationMs === undefined ? {} : { durationMs }),
    ...(message === undefined ? {} : { message: clip(message.trim(), TEST_LIMITS.messageLength) }),
    ...(body.trim() === '' ? {} : { output: firstLines(body.replace(/^\s*\n/, ''), TEST_LIMITS.outputLines, TEST_LIMITS.outputLength) }),
  });
}

/** Walks suites (iteratively: depth is already bounded, but no recursion is needed either). */
function walk(roots: Node[], sink: ParseSink): void {
  const stack: Array<{ node: Node; path: string }> = roots.map((node) => ({ node, path: '' })).reverse();
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    const own = attr(node, 'name')?.trim() ?? '';
    const suite = path === '' ? own : own === '' ? path : `${path} › ${own}`;
    for (const tc of nodes(node['testcase'])) if (!testCase(tc, suite, sink)) return;
    const children = [...nodes(node['testsuite']), ...nodes(node['testsuites'])];
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!, path: suite });
  }
}

export function parseJunit(xml: string, sink: ParseSink): void {
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) {
    throw new ResultFileError('has a DOCTYPE or entity declaration (refused: a JUnit file needs neither, and entities are how XML files attack their readers)');
  }
  let doc: Node;
  try {
    doc = parser.parse(xml) as Node;
  } catch (error) {
    throw new ResultFileError(`is not well-formed XML: ${clip(error instanceof Error ? error.message : String(error), 300)}`);
  }
  const roots = [...nodes(doc['testsuites']), ...nodes(doc['testsuite'])];
  if (roots.length === 0) throw new ResultFileError('has no <testsuites> or <testsuite> element: not a JUnit XML file');
  walk(roots, sink);
}
