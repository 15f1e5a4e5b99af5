// Checks with a status and one line each, shared by `svc doctor` and `svc-admin diagnose`: the
// overall status and the exit code follow the spec's doctor rule (0 when every check passes,
// 1 when any warns, 2 when any fails; a skipped check counts for nothing).
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface Check {
  name: string;
  status: CheckStatus;
  message: string;
}

export type OverallStatus = 'pass' | 'warn' | 'fail';

export function overallStatus(checks: readonly Check[]): OverallStatus {
  return checks.some((c) => c.status === 'fail') ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'pass';
}

export function checksExitCode(status: OverallStatus): number {
  return status === 'fail' ? 2 : status === 'warn' ? 1 : 0;
}

/** `pass  database      connected …` */
export function checkLine(check: Check, nameWidth = 13): string {
  return `${check.status.padEnd(4)}  ${check.name.padEnd(nameWidth)} ${check.message}`;
}

export function summaryLine(status: OverallStatus): string {
  return status === 'pass' ? 'all checks pass' : status === 'warn' ? 'some checks warn' : 'some checks fail';
}
