// `testResults` on a job or a step (docs/test-results.md): globs, relative to the job's
// workspace, of the JUnit XML or TAP files the steps write. Checked here so a pattern the agent
// would refuse (outside the workspace, unreadable as a glob) fails `svc compile`, not a run.
import picomatch from 'picomatch';
import { childPath, CompileErrorCode, type CompileScope } from './compile-scope.ts';

export const MAX_TEST_RESULT_PATTERNS = 20;
export const MAX_TEST_RESULT_PATTERN_LENGTH = 500;

function why(pattern: string): string | undefined {
  if (pattern.trim() === '') return 'a pattern is empty';
  if (pattern.length > MAX_TEST_RESULT_PATTERN_LENGTH) return `a pattern is longer than ${MAX_TEST_RESULT_PATTERN_LENGTH} characters`;
  if (/[\u0000-\u001f]/.test(pattern)) return `${JSON.stringify(pattern)} holds a control character`;
  if (pattern.startsWith('/') || /^[A-Za-z]:[\\/]/.test(pattern) || pattern.startsWith('\\')) return `${JSON.stringify(pattern)} is absolute: give it relative to the workspace`;
  if (pattern.startsWith('!')) return `${JSON.stringify(pattern)} is a negation: list the files to read, not the ones to skip`;
  if (pattern.split(/[\\/]/).includes('..')) return `${JSON.stringify(pattern)} reaches outside the workspace (..)`;
  try {
    picomatch.makeRe(pattern, { dot: true, strictBrackets: true });
  } catch (error) {
    return `${JSON.stringify(pattern)} is not a valid glob (${error instanceof Error ? error.message : String(error)})`;
  }
  return undefined;
}

/** A string or a list of globs → the lock's list; undefined when absent. */
export function testResultPatterns(scope: CompileScope, path: string, value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? (value as unknown[]) : scope.fail(CompileErrorCode.testResults, path, 'must be a glob or a list of globs (JUnit XML or TAP files, relative to the workspace)');
  if (list.length === 0) scope.fail(CompileErrorCode.testResults, path, 'the list is empty: leave testResults out instead');
  if (list.length > MAX_TEST_RESULT_PATTERNS) scope.fail(CompileErrorCode.testResults, path, `${list.length} patterns; at most ${MAX_TEST_RESULT_PATTERNS}`);
  return list.map((item, index) => {
    const at = typeof value === 'string' ? path : childPath(path, index);
    if (typeof item !== 'string') scope.fail(CompileErrorCode.testResults, at, 'each pattern must be a string');
    const problem = why(item);
    if (problem !== undefined) scope.fail(CompileErrorCode.testResults, at, problem);
    return item;
  });
}
