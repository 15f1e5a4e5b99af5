// Field checks shared by the lock-entry builders. Definitions may come from plain JavaScript
// (`.mjs` mode), so nothing here trusts the TypeScript types: every value is checked and
// normalized, and a bad one fails with the field path.
import { Cron } from 'croner';
import picomatch from 'picomatch';
import { childPath, CompileErrorCode, type CompileScope } from './compile-scope.ts';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

export function expectObject(scope: CompileScope, path: string, value: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (!isPlainObject(value)) scope.fail(CompileErrorCode.invalidDefinition, path, 'must be an object');
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key) && value[key] !== undefined) {
      scope.fail(CompileErrorCode.invalidDefinition, childPath(path, key), `unknown field (expected one of: ${allowed.join(', ')})`);
    }
  }
  return value;
}

export function optionalString(scope: CompileScope, path: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') scope.fail(CompileErrorCode.invalidValue, path, 'must be a string');
  return value;
}

export function nonEmptyString(scope: CompileScope, path: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') scope.fail(CompileErrorCode.invalidValue, path, 'must be a non-empty string');
  if (value.includes('\0')) scope.fail(CompileErrorCode.invalidValue, path, 'must not contain a NUL byte');
  return value;
}

export function optionalBoolean(scope: CompileScope, path: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') scope.fail(CompileErrorCode.invalidValue, path, 'must be true or false');
  return value;
}

export function optionalInteger(
  scope: CompileScope,
  path: string,
  value: unknown,
  limits: { min: number; max?: number; unit?: string },
): number | undefined {
  if (value === undefined) return undefined;
  const unit = limits.unit === undefined ? '' : ` ${limits.unit}`;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < limits.min || (limits.max !== undefined && value > limits.max)) {
    const range = limits.max === undefined ? `at least ${limits.min}` : `between ${limits.min} and ${limits.max}`;
    scope.fail(CompileErrorCode.invalidValue, path, `must be an integer ${range}${unit}`);
  }
  return value;
}

export function arrayOf<T>(scope: CompileScope, path: string, value: unknown, each: (item: unknown, path: string) => T): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) scope.fail(CompileErrorCode.invalidValue, path, 'must be an array');
  return value.map((item, index) => each(item, childPath(path, index)));
}

/** Sorted, de-duplicated members of an allowed set. */
export function enumSet<T extends string>(
  scope: CompileScope,
  path: string,
  value: unknown,
  allowed: readonly T[],
  fallback: readonly T[],
  code: CompileErrorCode = CompileErrorCode.invalidTrigger,
): T[] {
  if (value === undefined) return [...fallback];
  const items = arrayOf(scope, path, value, (item, itemPath) => {
    if (typeof item !== 'string' || !(allowed as readonly string[]).includes(item)) {
      scope.fail(code, itemPath, `${JSON.stringify(item)} is not one of: ${allowed.join(', ')}`);
    }
    return item as T;
  });
  if (items.length === 0) scope.fail(code, path, 'must list at least one value (omit it for the default)');
  return [...new Set(items)].sort();
}

/** Sorted, de-duplicated names matching `shape`. */
export function nameSet(scope: CompileScope, path: string, value: unknown, shape: RegExp, what: string): string[] {
  const items = arrayOf(scope, path, value, (item, itemPath) => {
    if (typeof item !== 'string' || !shape.test(item)) scope.fail(CompileErrorCode.invalidName, itemPath, `${JSON.stringify(item)} is not a valid ${what}`);
    return item;
  });
  return [...new Set(items)].sort();
}

const GLOB_OPTIONS = { strictBrackets: true, dot: true } as const;

/** One glob: `!` negates; the rest must compile. */
export function glob(scope: CompileScope, path: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') scope.fail(CompileErrorCode.invalidGlob, path, 'must be a non-empty glob string');
  if (value.includes('\0')) scope.fail(CompileErrorCode.invalidGlob, path, 'must not contain a NUL byte');
  const body = value.startsWith('!') ? value.slice(1) : value;
  if (body === '' || body.startsWith('!')) scope.fail(CompileErrorCode.invalidGlob, path, `${JSON.stringify(value)} negates nothing`);
  try {
    picomatch.makeRe(body, GLOB_OPTIONS);
  } catch (error) {
    scope.fail(CompileErrorCode.invalidGlob, path, `${JSON.stringify(value)} is not a valid glob: ${(error as Error).message}`, error);
  }
  return value;
}

/**
 * Globs in declared order: the last matching pattern decides, and a list of only negations means
 * "everything except" (`['!main']`: every branch but main), as workflow/matching reads it.
 */
export function globList(scope: CompileScope, path: string, value: unknown): string[] {
  return arrayOf(scope, path, value, (item, itemPath) => glob(scope, itemPath, item));
}

/** Repository-relative glob (paths, hashFiles, requires): no absolute paths, no `..`. */
export function relativeGlob(scope: CompileScope, path: string, value: unknown): string {
  const pattern = glob(scope, path, value);
  const body = pattern.startsWith('!') ? pattern.slice(1) : pattern;
  if (body.startsWith('/') || /^[A-Za-z]:/.test(body) || body.includes('\\')) {
    scope.fail(CompileErrorCode.invalidGlob, path, `${JSON.stringify(pattern)} must be relative to the repository root with / separators`);
  }
  if (body.split('/').includes('..')) scope.fail(CompileErrorCode.invalidGlob, path, `${JSON.stringify(pattern)} must not contain ..`);
  return pattern;
}

export function relativeGlobList(scope: CompileScope, path: string, value: unknown): string[] {
  const items = globList(scope, path, value);
  items.forEach((item, index) => relativeGlob(scope, childPath(path, index), item));
  return items;
}

/**
 * A label matcher: an agent label (`linux`, `kici:os:linux`, `gpu/a100`), optionally negated
 * with a leading `!` and optionally ending in `*` for a prefix match.
 */
export const LABEL_MATCHER = /^!?[A-Za-z0-9][A-Za-z0-9._:/=+-]{0,127}\*?$/;

export function labelMatchers(scope: CompileScope, path: string, value: unknown, options: { required: boolean }): string[] {
  const list = typeof value === 'string' ? [value] : value;
  const items = arrayOf(scope, path, list, (item, itemPath) => {
    if (typeof item !== 'string' || !LABEL_MATCHER.test(item)) {
      scope.fail(
        CompileErrorCode.invalidLabel,
        itemPath,
        `${JSON.stringify(item)} is not a valid label matcher (letters, digits and . _ : / = + -, an optional leading ! and trailing *)`,
      );
    }
    return item;
  });
  if (options.required && !items.some((item) => !item.startsWith('!'))) {
    scope.fail(CompileErrorCode.invalidLabel, path, 'must name at least one label an agent carries (not only negations)');
  }
  const positives = new Set(items.filter((i) => !i.startsWith('!')));
  for (const item of items) {
    if (item.startsWith('!') && positives.has(item.slice(1))) {
      scope.fail(CompileErrorCode.invalidLabel, path, `requires and forbids ${JSON.stringify(item.slice(1))}, so no agent can match`);
    }
  }
  return [...new Set(items)].sort();
}

const CRON_NICKNAMES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

/** Five-field cron (minute precision: the scheduler ticks every 30 s) or a nickname. */
export function cronExpression(scope: CompileScope, path: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') scope.fail(CompileErrorCode.invalidCron, path, 'must be a cron expression');
  const expr = value.trim().split(/\s+/).join(' ');
  if (expr.startsWith('@')) {
    if (!CRON_NICKNAMES.includes(expr.toLowerCase())) {
      scope.fail(CompileErrorCode.invalidCron, path, `${JSON.stringify(value)} is not a known nickname (${CRON_NICKNAMES.join(', ')})`);
    }
    return expr.toLowerCase();
  }
  if (expr.split(' ').length !== 5) {
    scope.fail(CompileErrorCode.invalidCron, path, `${JSON.stringify(value)} must have five fields: minute hour day-of-month month day-of-week`);
  }
  try {
    new Cron(expr, { paused: true });
  } catch (error) {
    scope.fail(CompileErrorCode.invalidCron, path, `${JSON.stringify(value)} is not a valid cron expression: ${(error as Error).message}`, error);
  }
  return expr;
}

export function timezone(scope: CompileScope, path: string, value: unknown): string {
  if (value === undefined) return 'UTC';
  if (typeof value !== 'string' || value === '') scope.fail(CompileErrorCode.invalidCron, path, 'must be an IANA time zone name');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch (error) {
    scope.fail(CompileErrorCode.invalidCron, path, `${JSON.stringify(value)} is not a known time zone`, error);
  }
  return value;
}

/** A regular expression kept as source and flags; stateful flags (g, y) make no sense for a filter. */
export function regexSource(scope: CompileScope, path: string, value: RegExp): { source: string; flags: string } {
  const flags = value.flags;
  if (/[gyd]/.test(flags)) scope.fail(CompileErrorCode.invalidRegex, path, `flags ${JSON.stringify(flags)} are not allowed (use only i, m, s, u)`);
  if (/v/.test(flags)) scope.fail(CompileErrorCode.invalidRegex, path, 'the v flag is not supported (use u)');
  try {
    new RegExp(value.source, flags);
  } catch (error) {
    scope.fail(CompileErrorCode.invalidRegex, path, `is not a valid regular expression: ${(error as Error).message}`, error);
  }
  return { source: value.source, flags: [...flags].sort().join('') };
}

export const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
export const SECRET_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,199}$/;

/** `<context>:<key>`. */
export function secretRef(scope: CompileScope, path: string, value: unknown): { ref: string; context: string } {
  if (typeof value !== 'string') scope.fail(CompileErrorCode.invalidSecretRef, path, 'must be a "<context>:<key>" string');
  const colon = value.indexOf(':');
  const context = colon < 0 ? '' : value.slice(0, colon);
  const key = colon < 0 ? '' : value.slice(colon + 1);
  if (!CONTEXT_NAME.test(context) || !SECRET_KEY.test(key)) {
    scope.fail(CompileErrorCode.invalidSecretRef, path, `${JSON.stringify(value)} must be qualified as "<context>:<KEY>"`);
  }
  return { ref: value, context };
}

export function isFunction(value: unknown): value is (...args: never[]) => unknown {
  return typeof value === 'function';
}
