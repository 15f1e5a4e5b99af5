// fastify's validator compiler, built on the shared compiled validators (schemas/validate.ts) so
// HTTP bodies are refused with the same dot-path issues as WebSocket frames.
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { compileSchema, formatIssues, type SchemaCheck, type ValidationIssue } from '../../../schemas/validate.ts';
import { InputError, type ErrorCode } from '../../../core/errors.ts';

const compiled = new WeakMap<object, SchemaCheck<TSchema>>();

/** One compiled check per schema object, however many routes use it. */
export function checkFor(schema: TSchema): SchemaCheck<TSchema> {
  let check = compiled.get(schema);
  if (!check) {
    check = compileSchema(schema);
    compiled.set(schema, check);
  }
  return check;
}

const PARTS: Record<string, { code: ErrorCode; name: string }> = {
  body: { code: 'SVC_ERR_HTTP_INVALID_BODY', name: 'body' },
  querystring: { code: 'SVC_ERR_HTTP_INVALID_QUERY', name: 'query string' },
  params: { code: 'SVC_ERR_HTTP_INVALID_PARAMS', name: 'path parameters' },
  headers: { code: 'SVC_ERR_HTTP_INVALID_HEADERS', name: 'headers' },
};

/**
 * The first string (value or key) PostgreSQL cannot store — one holding NUL or an unpaired
 * surrogate (text and jsonb refuse both) — as an issue; undefined when there is none. Checked on
 * every validated part, so such input is a 400 at the door instead of a database error later.
 */
export function unstorableText(value: unknown, path = ''): ValidationIssue | undefined {
  const bad = (s: string): boolean => s.includes('\u0000') || !s.isWellFormed();
  const issue = { path, message: 'must not contain NUL characters or unpaired surrogates' };
  if (typeof value === 'string') return bad(value) ? issue : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (bad(key)) return { path: at, message: 'a key must not contain NUL characters or unpaired surrogates' };
    const found = unstorableText(child, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

export const svcValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = checkFor(schema);
  const part = PARTS[httpPart ?? 'body'] ?? { code: 'SVC_ERR_HTTP_INVALID_BODY', name: httpPart ?? 'request' };
  const isBody = httpPart === 'body' || httpPart === undefined;
  return (value: unknown) => {
    // Query strings, path parameters and headers arrive as strings; bodies are JSON and are not coerced.
    const input = isBody ? value : Value.Convert(schema, value);
    const result = check.validate(input);
    const issues = result.ok ? [unstorableText(input)].filter((i) => i !== undefined) : result.issues;
    if (issues.length === 0) return { value: input };
    return {
      error: new InputError(part.code, `invalid request ${part.name}: ${formatIssues(issues)}`, { details: { issues } }),
    };
  };
};
