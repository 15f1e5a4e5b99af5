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
  // Character references (`&#10;`, `&#x3C;`) are XML, and JUnit writers use them (Maven surefire
  // for newlines in attributes); fast-xml-parser decodes them only with this option, which also
  // knows HTML's named entities (a well-formed JUnit file has none). Declared entities stay refused.
  htmlEntities: true,
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

/** The first `<failure>` (or `<error>`) of a case: an element with attributes, or just its text. */
function firstOf(value: unknown): { attrs: Node; body: string } | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const first: unknown = value[0];
  if (typeof first === 'string') return { attrs: {}, body: first };
  if (typeof first === 'object' && first !== null) return { attrs: first as Node, body: text(first) };
  return { attrs: {}, body: '' };
}

/** TAP diagnostics as YAML (what tap's JUnit reporter writes into `<failure>`): not a message. */
const YAML_DIAG = /^(compare|at|stack|found|wanted|pattern|diff|source|message|error|code|test|type|doesNotMatch|expected|actual):( |$)/;

/** Without a message attribute: the body's first line, or for YAML diagnostics their `message`, else the case's name. */
function messageFromBody(body: string, name: string): string | undefined {
  const first = body.split(/\r?\n/).find((l) => l.trim() !== '')?.trim();
  if (first === undefined) return undefined;
  if (!YAML_DIAG.test(first)) return first;
  const line = /^message: (.+)$/m.exec(body)?.[1]?.trim();
  return line !== undefined && line !== '' ? line.replace(/^["']|["']$/g, '') : name;
}

function testCase(node: Node, suite: string, sink: ParseSink): boolean {
  const name = attr(node, 'name')?.trim() || '(unnamed)';
  const classname = attr(node, 'classname')?.trim();
  const failure = firstOf(node['failure']);
  const error = firstOf(node['error']);
  const skipped = Array.isArray(node['skipped']) && node['skipped'].length > 0;
  const status = failure !== undefined ? 'failed' : error !== undefined ? 'errored' : skipped ? 'skipped' : 'passed';
  const problem = failure ?? error;
  const body = problem?.body ?? '';
  const message = problem === undefined ? undefined : (attr(problem.attrs, 'message') ?? messageFromBody(body, name) ?? status);
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

/**
 * Walks suites (iteratively: depth is already bounded, but no recursion is needed either). The
 * name of the `<testsuites>` root is a report label, not a suite: it is not part of the path. A
 * case named like a suite nested beside it is that subtest's own summary (tap's reporter writes
 * both): the suite's cases stand for it.
 */
function walk(roots: Node[], sink: ParseSink): void {
  const stack: Array<{ node: Node; path: string; label: boolean }> = roots.map((node) => ({ node, path: '', label: false }));
  stack.reverse();
  while (stack.length > 0) {
    const { node, path, label } = stack.pop()!;
    const own = label ? '' : (attr(node, 'name')?.trim() ?? '');
    const suite = path === '' ? own : own === '' ? path : `${path} › ${own}`;
    const nested = nodes(node['testsuite']);
    const subtests = new Set(nested.map((n) => attr(n, 'name')?.trim() ?? ''));
    for (const tc of nodes(node['testcase'])) {
      if (subtests.has(attr(tc, 'name')?.trim() ?? '\u0000')) continue;
      if (!testCase(tc, suite, sink)) return;
    }
    const children = [...nested.map((n) => ({ node: n, path: suite, label: false })), ...nodes(node['testsuites']).map((n) => ({ node: n, path: suite, label: true }))];
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
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
  const labels = nodes(doc['testsuites']);
  const suites = nodes(doc['testsuite']);
  if (labels.length + suites.length === 0) throw new ResultFileError('has no <testsuites> or <testsuite> element: not a JUnit XML file');
  walk([...labels.map((node) => ({ ...node, name: undefined }) as Node), ...suites], sink);
}
