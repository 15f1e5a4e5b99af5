// The error-code catalogue (core/error-codes.ts) against the tree: every SVC_ERR_* literal is
// declared, every declared code is used, no code is declared twice, throw sites use the class of
// the declared kind; rate_limited maps to 429 + Retry-After over HTTP and to exit 1 with a retry
// hint in the CLIs.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ERROR_CODES, ERROR_CODE_AREAS, errorCodeEntry, isErrorCode } from '../../core/error-codes.ts';
import { InputError, RateLimitedError, SvcError, type ErrorKind } from '../../core/errors.ts';
import { errorText, exitCodeFor } from '../../core/cli/base-command.ts';
import { createHttpServer } from '../../kernel/services/http/index.ts';
import { mapError } from '../../kernel/services/http/error-mapping.ts';
import { createLogger } from '../../core/logging.ts';
import { createMetrics } from '../../kernel/services/metrics.ts';
import { testCode } from '../fixtures/error-codes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const SOURCE_DIRS = ['core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent', 'cli', 'admin-cli', 'bin', 'schemas', 'examples'];
const CATALOGUE = new Set(['core/error-codes.ts']);
const isCatalogue = (file: string) => CATALOGUE.has(file) || file.startsWith('core/error-codes/');

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(join(ROOT, dir), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...tsFiles(path));
    else if (e.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const sources = new Map<string, string>();
for (const dir of SOURCE_DIRS) for (const file of tsFiles(dir)) sources.set(file, readFileSync(join(ROOT, file), 'utf8'));
const tests = new Map<string, string>();
for (const file of tsFiles('test')) if (file !== 'test/core/error-codes.test.ts') tests.set(file, readFileSync(join(ROOT, file), 'utf8'));

const keys = Object.keys(ERROR_CODES);
/** A family key (`SVC_ERR_X_{status}`) as a code it stands for; a plain code as itself. */
const sample = (key: string) => key.replace(/\{[a-zA-Z]+\}$/, '0');

interface Mention {
  file: string;
  line: number;
  /** `code`: a whole code; `prefix`: ends in `_` (startsWith, prose); `pattern`: built in a template. */
  form: 'code' | 'prefix' | 'pattern';
  text: string;
  regex?: RegExp;
}

function mentions(file: string, text: string): Mention[] {
  const out: Mention[] = [];
  for (const m of text.matchAll(/SVC_ERR_(?:[A-Z0-9_]|\$\{[^}`]*\})*/g)) {
    const token = m[0];
    const line = text.slice(0, m.index).split('\n').length;
    if (token.includes('${')) {
      const source = token.split(/\$\{[^}`]*\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[A-Z0-9_]+');
      out.push({ file, line, form: 'pattern', text: token, regex: new RegExp(`^${source}$`) });
    } else if (token.endsWith('_')) out.push({ file, line, form: 'prefix', text: token });
    else out.push({ file, line, form: 'code', text: token });
  }
  return out;
}

const sourceMentions = [...sources].filter(([file]) => !isCatalogue(file)).flatMap(([file, text]) => mentions(file, text));
const testMentions = [...tests].flatMap(([file, text]) => mentions(file, text));

/**
 * Codes of plugins outside svc (examples/plugins/gitea): they build against svc/plugin and throw
 * through pluginError with codes of their own, which svc's catalogue cannot list.
 */
const OUTSIDE_PLUGIN_CODE = /^SVC_ERR_GITEA_/;

function declaredProblem(m: Mention, inTests: boolean): string | undefined {
  if (inTests && m.text.startsWith('SVC_ERR_TEST_')) return undefined;
  if (OUTSIDE_PLUGIN_CODE.test(m.text)) return undefined;
  if (m.form === 'code') return isErrorCode(m.text) ? undefined : `${m.file}:${m.line}: ${m.text} is not declared in core/error-codes`;
  if (m.form === 'prefix') return keys.some((k) => k.startsWith(m.text)) ? undefined : `${m.file}:${m.line}: no declared code starts with ${m.text}`;
  return keys.some((k) => m.regex!.test(sample(k))) ? undefined : `${m.file}:${m.line}: no declared code matches ${m.text}`;
}

t.test('every SVC_ERR_ literal in the source tree is declared', async (t) => {
  t.ok(sourceMentions.length > 400, `found ${sourceMentions.length} mentions`);
  t.same(sourceMentions.map((m) => declaredProblem(m, false)).filter((p) => p !== undefined), []);
});

t.test('codes that tests match on are declared (SVC_ERR_TEST_* are test-only fakes)', async (t) => {
  t.same(testMentions.map((m) => declaredProblem(m, true)).filter((p) => p !== undefined), []);
});

t.test('every declared code is used outside the catalogue', async (t) => {
  const used = new Set<string>();
  for (const m of sourceMentions) {
    if (m.form === 'code') used.add(m.text);
    if (m.form === 'pattern') for (const k of keys) if (m.regex!.test(sample(k))) used.add(k);
  }
  // A family is used when a template builds it (SVC_ERR_CLI_PLATFORM_HTTP_${status}).
  t.same(keys.filter((k) => !used.has(k)), []);
});

t.test('no code is declared twice, and the entries are well formed', async (t) => {
  const total = Object.values(ERROR_CODE_AREAS).reduce((n, area) => n + Object.keys(area).length, 0);
  t.equal(keys.length, total, 'no code is in two area files (the merge would hide one)');
  const kinds: ErrorKind[] = ['input', 'authentication', 'not_allowed', 'not_found', 'conflict', 'rate_limited', 'unavailable', 'internal'];
  const bad: string[] = [];
  for (const [code, entry] of Object.entries(ERROR_CODES) as [string, { kind: ErrorKind; message: string }][]) {
    if (!/^SVC_ERR_[A-Z0-9]+(_[A-Z0-9]+)*(_\{[a-z][A-Za-z0-9]*\})?$/.test(code)) bad.push(`${code}: not SVC_ERR_<AREA>_<WHAT>`);
    if (!kinds.includes(entry.kind)) bad.push(`${code}: unknown kind ${entry.kind}`);
    if (entry.message.trim() === '' || entry.message !== entry.message.trim()) bad.push(`${code}: empty or padded message`);
    for (const p of entry.message.matchAll(/\{([^}]*)\}/g)) {
      // `{ run, timeout }` (with spaces) is prose about an object, not a placeholder.
      if (!/^[a-z][A-Za-z0-9]*$/.test(p[1]!) && !/^ .* $/.test(p[1]!)) bad.push(`${code}: placeholder {${p[1]}} is not {camelCase}`);
    }
  }
  t.same(bad, []);
  // Spelling variants: the same words in another order under one area.
  const byWords = new Map<string, string[]>();
  for (const code of keys) {
    const [area, ...what] = code.replace(/^SVC_ERR_/, '').split('_');
    const key = `${area}:${[...what].sort().join('_')}`;
    byWords.set(key, [...(byWords.get(key) ?? []), code]);
  }
  const variants = [...byWords.values()].filter((codes) => codes.length > 1).map((codes) => codes.sort().join(' ~ '));
  // Both spellings are in use, so they are kept: the GitHub payload parser and event emission.
  const known = ['SVC_ERR_EVENT_INVALID_PAYLOAD ~ SVC_ERR_EVENT_PAYLOAD_INVALID'];
  t.same(variants.filter((v) => !known.includes(v)), [], 'no new spelling variants');
});

// The class at a throw site must carry the declared kind.
const BASE_KIND: Record<string, ErrorKind> = {
  SvcError: 'internal',
  InputError: 'input',
  AuthenticationError: 'authentication',
  NotAllowedError: 'not_allowed',
  NotFoundError: 'not_found',
  ConflictError: 'conflict',
  RateLimitedError: 'rate_limited',
  UnavailableError: 'unavailable',
};

/** Throw sites whose class differs from the declared kind; behaviour is kept, each says why. */
const KIND_EXCEPTIONS: Record<string, string> = {
  // The process sandbox refuses a configuration that requires bwrap (input); the container
  // sandbox lacks a runtime (unavailable).
  'SVC_ERR_SANDBOX_UNAVAILABLE InputError': 'config demands bwrap',
  // ctx.$ after a cancel is the step's misuse (input); the runner's cancelled API call is internal.
  'SVC_ERR_RUNNER_CANCELLED InputError': 'step misuse',
  // JobFailure (kind internal) reports a job set-up failure into the job's result, not a request.
  'SVC_ERR_AGENT_SANDBOX_UNAVAILABLE JobFailure': 'job result',
  'SVC_ERR_BUILD_BUNDLE JobFailure': 'job result',
};

t.test('throw sites use the class of the declared kind', async (t) => {
  const classBase = new Map<string, string>();
  for (const text of sources.values()) for (const m of text.matchAll(/class\s+(\w+)\s+extends\s+(\w+)/g)) classBase.set(m[1]!, m[2]!);
  const kindOf = (name: string): ErrorKind | undefined => {
    for (let c: string | undefined = name, i = 0; c !== undefined && i < 10; c = classBase.get(c), i++) if (BASE_KIND[c] !== undefined) return BASE_KIND[c];
    return undefined;
  };
  // Named codes: `const X = 'SVC_ERR_…'` and maps `{ key: 'SVC_ERR_…' }` (CompileErrorCode.key).
  const named = new Map<string, string>();
  for (const text of sources.values()) {
    for (const m of text.matchAll(/const (\w+) = '(SVC_ERR_[A-Z0-9_]+)'/g)) named.set(m[1]!, m[2]!);
    for (const m of text.matchAll(/export const (\w+) = \{([^}]*)\}/gs)) for (const p of m[2]!.matchAll(/(\w+): '(SVC_ERR_[A-Z0-9_]+)'/g)) named.set(`${m[1]}.${p[1]}`, p[2]!);
  }
  const sites: { file: string; line: number; cls: string; code: string }[] = [];
  for (const [file, text] of sources) {
    if (isCatalogue(file)) continue;
    const lineOf = (i: number) => text.slice(0, i).split('\n').length;
    for (const m of text.matchAll(/new\s+(\w+)\(\s*(?:'(SVC_ERR_[A-Z0-9_]+)'|([A-Za-z_][\w]*(?:\.\w+)?)\s*[,)])/g)) {
      const code = m[2] ?? named.get(m[3]!);
      if (code !== undefined && kindOf(m[1]!) !== undefined) sites.push({ file, line: lineOf(m.index), cls: m[1]!, code });
    }
    for (const m of text.matchAll(/super\(\s*(?:'(SVC_ERR_[A-Z0-9_]+)'|([A-Z][A-Z0-9_]*)\s*,)/g)) {
      const cls = [...text.slice(0, m.index).matchAll(/class\s+(\w+)\s+extends/g)].pop()?.[1];
      const code = m[1] ?? named.get(m[2]!);
      if (cls !== undefined && code !== undefined) sites.push({ file, line: lineOf(m.index), cls, code });
    }
    // CompileScope.fail throws InputError with the code it is given.
    for (const m of text.matchAll(/\.fail\(\s*(CompileErrorCode\.\w+)/g)) {
      const code = named.get(m[1]!);
      if (code !== undefined) sites.push({ file, line: lineOf(m.index), cls: 'InputError', code });
    }
  }
  t.ok(sites.length > 500, `checked ${sites.length} throw sites`);
  const wrong = sites
    .filter((s) => errorCodeEntry(s.code) !== undefined && errorCodeEntry(s.code)!.kind !== kindOf(s.cls) && KIND_EXCEPTIONS[`${s.code} ${s.cls}`] === undefined)
    .map((s) => `${s.file}:${s.line}: new ${s.cls}('${s.code}') is ${kindOf(s.cls)}, declared ${errorCodeEntry(s.code)!.kind}`);
  t.same(wrong, []);
  const stale = Object.keys(KIND_EXCEPTIONS).filter((e) => !sites.some((s) => `${s.code} ${s.cls}` === e));
  t.same(stale, [], 'every exception still names a real throw site');
});

t.test('families: a code built from a number is declared by its family', async (t) => {
  t.ok(isErrorCode('SVC_ERR_CLI_PLATFORM_HTTP_502'));
  t.notOk(isErrorCode('SVC_ERR_CLI_PLATFORM_HTTP_x'));
  t.notOk(isErrorCode('SVC_ERR_NOT_DECLARED_ANYWHERE'));
  t.equal(errorCodeEntry('SVC_ERR_RUNS_RERUN_COOLDOWN')?.kind, 'rate_limited');
});

t.test('rate_limited: 429 with Retry-After through the one HTTP mapping', async (t) => {
  const error = new RateLimitedError('SVC_ERR_RUNS_RERUN_COOLDOWN', 'run r was re-run less than 5 s ago; retry in 3 s', 2.2);
  const mapped = mapError(error, { requestId: 'r1' });
  t.equal(mapped.status, 429);
  t.same(mapped.headers, { 'retry-after': '3' });
  t.same(mapped.body, { error: { code: 'SVC_ERR_RUNS_RERUN_COOLDOWN', message: 'run r was re-run less than 5 s ago; retry in 3 s' } });

  const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'error-codes-test' }), metrics: createMetrics({ defaultMetrics: false }) });
  t.teardown(() => app.close());
  app.get('/limited', async () => {
    throw new RateLimitedError('SVC_ERR_WEBHOOK_RATE_LIMITED', 'too many webhooks for org "o"; retry later', 7);
  });
  const response = await app.inject({ method: 'GET', url: '/limited' });
  t.equal(response.statusCode, 429);
  t.equal(response.headers['retry-after'], '7');
  t.same(response.json(), { error: { code: 'SVC_ERR_WEBHOOK_RATE_LIMITED', message: 'too many webhooks for org "o"; retry later' } });
});

t.test('rate_limited in the CLIs: exit 1 and when to retry', async (t) => {
  const limited = new RateLimitedError('SVC_ERR_WEBHOOK_RATE_LIMITED', 'too many requests', 4.5);
  t.equal(exitCodeFor(limited), 1);
  t.equal(errorText(limited), 'SVC_ERR_WEBHOOK_RATE_LIMITED: too many requests (retry in 5 s)');
  const says = new RateLimitedError('SVC_ERR_RUNS_RERUN_COOLDOWN', 'run r was re-run less than 5 s ago; retry in 3 s', 3);
  t.equal(errorText(says), 'SVC_ERR_RUNS_RERUN_COOLDOWN: run r was re-run less than 5 s ago; retry in 3 s', 'no second hint');
  t.equal(errorText(new InputError('SVC_ERR_CLI_USAGE', 'bad flag')), 'SVC_ERR_CLI_USAGE: bad flag');
  t.equal(exitCodeFor(new InputError('SVC_ERR_CLI_USAGE', 'bad flag')), 2);
  t.equal(errorText(new SvcError(testCode('SVC_ERR_TEST_PLAIN'), 'x')), 'SVC_ERR_TEST_PLAIN: x');
  t.equal(relative(ROOT, ROOT), '');
});
