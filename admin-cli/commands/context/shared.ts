// What the context and secret commands share: the orchestrator database (--database-url or
// SVC_DATABASE_URL, migrated when fresh), the master key, and the spec's warning on stderr for
// a context with no binding (the command's exit code is unchanged).
import type { SecretContext } from '../../../kernel/orchestrator/secrets/index.ts';

export { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, withDatabase } from '../signing-key/shared.ts';

/** Prints the warning for an unbound context; returns whether it did. */
export function warnIfUnbound(context: SecretContext, stderr: NodeJS.WritableStream = process.stderr): boolean {
  if (context.bound) return false;
  stderr.write(
    `warning: context ${context.name} has no binding: no repository or org can use its secrets; ` +
      `bind it with svc-admin context bind ${context.name} --repository <owner/repo pattern> (or --org <org>)\n`,
  );
  return true;
}

export function describeContext(c: SecretContext): string {
  const list = (values: string[], none: string) => (values.length === 0 ? none : values.join(', '));
  return [
    `context ${c.name}`,
    `  repositories:          ${list(c.repositories, '(none)')}`,
    `  orgs:                  ${list(c.orgs, '(none)')}`,
    `  branches:              ${list(c.branches, '(any)')}`,
    `  minimum trust:         ${c.minTrust}`,
    `  allowLocalExecution:   ${c.allowLocalExecution}`,
    `  required reviewers:    ${list(c.requiredReviewers, '(none)')}`,
    `  wait timer:            ${c.waitTimerSeconds === 0 ? '(none)' : `${c.waitTimerSeconds} s`}`,
    `  concurrency limit:     ${c.concurrencyLimit === null ? '(none)' : c.concurrencyLimit}`,
  ].join('\n');
}
