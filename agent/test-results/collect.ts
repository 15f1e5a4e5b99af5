// The agent's side of `tests.collect` (docs/test-results.md): find the step's result files (the
// declared globs, the reported paths; all inside the workspace), read each within the limits,
// parse it as JUnit XML or TAP by its content, mask what the tests printed like log lines, and
// send the cases to the orchestrator in batches. Whatever a file holds, the outcome is cases and
// problem lines, never a thrown error that fails the job.
import { randomUUID } from 'node:crypto';
import { glob, open, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { messageOf } from '../../core/errors.ts';
import type { TestCase, TestsReportResponse } from '../../schemas/wire/agent.ts';
import type { Static } from 'typebox';
import type { RunnerApiContext } from '../jobs/runner-api-context.ts';
import { parseJunit, ResultFileError } from './junit.ts';
import { clip, TEST_LIMITS } from './limits.ts';
import { parseTap } from './tap.ts';

export const REPORT_BATCH = 5_000;

export interface CollectArgs {
  index: number;
  name: string;
  patterns: string[];
  paths: string[];
  exitFailure: boolean;
}

export interface CollectResult {
  files: number;
  total: number;
  failed: number;
  quarantinedFailed: number;
  waived: boolean;
  problems: string[];
}

function inside(workspace: string, abs: string): string | undefined {
  const rel = relative(workspace, abs);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? undefined : rel;
}

/** Workspace-relative files to read, and problem lines for what was refused or matched nothing. */
export async function resultFiles(workspace: string, patterns: readonly string[], paths: readonly string[], problems: string[]): Promise<string[]> {
  const found = new Set<string>();
  for (const pattern of patterns) {
    let matched = 0;
    if (pattern.split(/[\\/]/).includes('..') || isAbsolute(pattern)) {
      problems.push(`pattern ${JSON.stringify(pattern)} reaches outside the workspace; not read`);
      continue;
    }
    for await (const entry of glob(pattern, { cwd: workspace })) {
      if (found.size >= TEST_LIMITS.maxFiles) break;
      found.add(entry);
      matched++;
    }
    if (matched === 0) problems.push(`pattern ${JSON.stringify(pattern)} matched no file`);
  }
  for (const path of paths) {
    const rel = inside(workspace, isAbsolute(path) ? resolve(path) : resolve(workspace, path));
    if (rel === undefined) problems.push(`${JSON.stringify(clip(path, 200))} is outside the workspace; not read`);
    else if (found.size < TEST_LIMITS.maxFiles) found.add(rel);
  }
  return [...found].sort();
}

async function readBounded(workspace: string, rel: string, budget: { bytes: number }): Promise<string> {
  const real = await realpath(join(workspace, rel)).catch(() => undefined);
  const realWorkspace = await realpath(workspace);
  if (real === undefined) throw new ResultFileError('does not exist');
  if (real !== realWorkspace && !real.startsWith(realWorkspace + sep)) throw new ResultFileError('links outside the workspace; not read');
  const info = await stat(real);
  if (!info.isFile()) throw new ResultFileError('is not a regular file');
  if (info.size > TEST_LIMITS.maxFileBytes) throw new ResultFileError(`is ${info.size} bytes; the limit is ${TEST_LIMITS.maxFileBytes}`);
  if (info.size > budget.bytes) throw new ResultFileError(`would pass the step's ${TEST_LIMITS.maxStepBytes}-byte budget for result files`);
  budget.bytes -= info.size;
  const handle = await open(real, 'r');
  let bytes: Buffer;
  try {
    bytes = Buffer.alloc(info.size);
    const { bytesRead } = await handle.read(bytes, 0, info.size, 0);
    bytes = bytes.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
  if (bytes.subarray(0, 8192).includes(0)) throw new ResultFileError('is binary (NUL bytes): neither JUnit XML nor TAP');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ResultFileError('is not UTF-8 text: neither JUnit XML nor TAP');
  }
}

/** `<` first: JUnit XML; a TAP line first: TAP; otherwise neither. */
export function parseResultText(text: string, add: (test: TestCase) => boolean): void {
  const body = text.replace(/^\uFEFF/, '');
  const sink = { add };
  if (/^\s*</.test(body)) return parseJunit(body, sink);
  if (/^\s*(TAP version \d+|1\.\.\d+|(not )?ok\b|# Subtest)/m.test(body)) return parseTap(body, sink);
  throw new ResultFileError('is neither JUnit XML nor TAP');
}

function masked(test: TestCase, mask: (s: string) => string): TestCase {
  const out: TestCase = { ...test, suite: mask(test.suite), name: mask(test.name) };
  if (test.message !== undefined) out.message = mask(test.message);
  if (test.output !== undefined) out.output = mask(test.output);
  return out;
}

export async function collectTests(args: CollectArgs, ctx: RunnerApiContext): Promise<CollectResult> {
  const problems: string[] = [];
  const files = await resultFiles(ctx.workspace, args.patterns, args.paths, problems);
  const cases: TestCase[] = [];
  let dropped = 0;
  const budget = { bytes: TEST_LIMITS.maxStepBytes };
  let read = 0;
  for (const rel of files) {
    try {
      const text = await readBounded(ctx.workspace, rel, budget);
      parseResultText(text, (test) => {
        if (cases.length >= TEST_LIMITS.maxTests) {
          dropped++;
          return false;
        }
        cases.push(masked(test, (s) => ctx.secrets.mask(s)));
        return true;
      });
      read++;
    } catch (error) {
      problems.push(`${clip(rel, 300)} ${error instanceof ResultFileError ? error.message : `could not be read: ${clip(messageOf(error), 300)}`}`);
    }
  }
  if (dropped > 0) problems.push(`more than ${TEST_LIMITS.maxTests} tests in one step: the rest were not recorded`);
  const failed = cases.filter((c) => c.status === 'failed' || c.status === 'errored').length;
  const step = { index: args.index, name: args.name };
  let answer: Static<typeof TestsReportResponse> | undefined;
  for (let at = 0; at === 0 || at < cases.length; at += REPORT_BATCH) {
    const results = cases.slice(at, at + REPORT_BATCH);
    const final = at + REPORT_BATCH >= cases.length;
    answer = (await ctx.request({
      type: 'tests.report.request',
      jobId: ctx.jobId,
      requestId: randomUUID(),
      step,
      results,
      final,
      ...(final ? { exitFailure: args.exitFailure, problems: problems.slice(0, 100).map((p) => clip(p, 1000)) } : {}),
    })) as Static<typeof TestsReportResponse>;
    if (answer.error !== undefined) throw new ResultFileError(`the orchestrator refused the results: ${answer.error.message}`);
  }
  return {
    files: read,
    total: cases.length,
    failed: answer?.failed ?? failed,
    quarantinedFailed: answer?.quarantinedFailed ?? 0,
    waived: answer?.waived === true,
    problems,
  };
}
