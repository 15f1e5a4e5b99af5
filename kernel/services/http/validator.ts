// fastify's validator compiler, built on the shared compiled validators (schemas/validate.ts) so
// HTTP bodies are refused with the same dot-path issues as WebSocket frames.
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { compileSchema, formatIssues, type SchemaCheck } from '../../../schemas/validate.ts';
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

export const svcValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = checkFor(schema);
  const part = PARTS[httpPart ?? 'body'] ?? { code: 'SVC_ERR_HTTP_INVALID_BODY', name: httpPart ?? 'request' };
  const isBody = httpPart === 'body' || httpPart === undefined;
  return (value: unknown) => {
    // Query strings, path parameters and headers arrive as strings; bodies are JSON and are not coerced.
    const input = isBody ? value : Value.Convert(schema, value);
    const result = check.validate(input);
    if (result.ok) return { value: input };
    return {
      error: new InputError(part.code, `invalid request ${part.name}: ${formatIssues(result.issues)}`, { details: { issues: result.issues } }),
    };
  };
};
