// The error-code catalogue: every SVC_ERR_* code the product throws, answers or stores, declared
// once with its kind and a message template. The areas live in core/error-codes/<area>.ts.
// `ErrorCode` is what SvcError and code-carrying helpers accept, so an undeclared code fails the
// typecheck; test/core/error-codes.test.ts checks the rest (every literal declared, every code
// used, kinds at throw sites). How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCodeEntry, ErrorKind, ExpandCode } from './error-codes/catalogue.ts';
import { AGENT_ERROR_CODES } from './error-codes/agent.ts';
import { CLI_ERROR_CODES } from './error-codes/cli.ts';
import { ORCHESTRATOR_ERROR_CODES } from './error-codes/orchestrator.ts';
import { PLATFORM_ERROR_CODES } from './error-codes/platform.ts';
import { PLUGINS_ERROR_CODES } from './error-codes/plugins.ts';
import { RELAY_ERROR_CODES } from './error-codes/relay.ts';
import { WEBHOOK_ERROR_CODES } from './error-codes/webhook.ts';
import { WORKFLOW_ERROR_CODES } from './error-codes/workflow.ts';

export type { ErrorCodeEntry, ErrorKind } from './error-codes/catalogue.ts';

/** The areas, by file; kept apart so the test can tell that no code is declared twice. */
export const ERROR_CODE_AREAS = {
  platform: PLATFORM_ERROR_CODES,
  workflow: WORKFLOW_ERROR_CODES,
  orchestrator: ORCHESTRATOR_ERROR_CODES,
  relay: RELAY_ERROR_CODES,
  webhook: WEBHOOK_ERROR_CODES,
  agent: AGENT_ERROR_CODES,
  plugins: PLUGINS_ERROR_CODES,
  cli: CLI_ERROR_CODES,
} as const;

export const ERROR_CODES = {
  ...PLATFORM_ERROR_CODES,
  ...WORKFLOW_ERROR_CODES,
  ...ORCHESTRATOR_ERROR_CODES,
  ...RELAY_ERROR_CODES,
  ...WEBHOOK_ERROR_CODES,
  ...AGENT_ERROR_CODES,
  ...PLUGINS_ERROR_CODES,
  ...CLI_ERROR_CODES,
} as const;

/** A catalogue key: a code, or a family such as `SVC_ERR_CLI_PLATFORM_HTTP_{status}`. */
export type ErrorCodeKey = keyof typeof ERROR_CODES;
/** A declared code, with families expanded (`SVC_ERR_CLI_PLATFORM_HTTP_${number}`). */
export type ErrorCode = ExpandCode<ErrorCodeKey>;
/** Declared codes of one kind, e.g. `ErrorCodeOfKind<'input'>`. */
export type ErrorCodeOfKind<K extends ErrorKind> = ExpandCode<
  { [C in ErrorCodeKey]: (typeof ERROR_CODES)[C]['kind'] extends K ? C : never }[ErrorCodeKey]
>;

/** The entry of a code (families included); undefined for a string that is not declared. */
export function errorCodeEntry(code: string): ErrorCodeEntry | undefined {
  const entries: Readonly<Record<string, ErrorCodeEntry>> = ERROR_CODES;
  const direct = entries[code];
  if (direct !== undefined) return direct;
  for (const [key, entry] of Object.entries(entries)) {
    const brace = key.indexOf('{');
    if (brace > 0 && code.startsWith(key.slice(0, brace)) && /^\d+$/.test(code.slice(brace))) return entry;
  }
  return undefined;
}

/**
 * A code received from another svc process (a wire error, an HTTP error body). It was declared
 * where it was thrown, possibly by another version, so it is carried on as it is, unchecked.
 */
export function receivedCode(code: string): ErrorCode {
  return code as ErrorCode;
}

/** True when `code` is declared: narrows a code received from another process. */
export function isErrorCode(code: string): code is ErrorCode {
  return errorCodeEntry(code) !== undefined;
}
