// Names and kinds of the scheduling pseudo-jobs a run may carry next to its lock jobs. Lock job
// names cannot contain `:` (the compiler's job-name pattern), so these never collide with them.
export const FILTER_JOB_NAME = 'svc:filter';
export const HOOKS_JOB_NAME = 'svc:hooks';
const GENERATE_PREFIX = 'svc:generate:';

/** `jobs.kind` values of the pseudo-jobs. */
export type PseudoKind = 'filter' | 'hooks' | 'generate';

/** Name of the job that evaluates the generator of dynamic lock entry `entry`. */
export function generatorJobName(entry: string): string {
  return `${GENERATE_PREFIX}${entry}`;
}

/** The lock entry a generator job evaluates, or undefined for any other name. */
export function generatorEntryOf(name: string): string | undefined {
  return name.startsWith(GENERATE_PREFIX) ? name.slice(GENERATE_PREFIX.length) : undefined;
}

/** Names the orchestrator owns (`svc:build`, `svc:filter`, …): never passed to steps as needs. */
export function isInternalJobName(name: string): boolean {
  return name.startsWith('svc:');
}

/** Same pattern as the compiler's job names. */
export const JOB_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/** `axis=value` pairs in axis order: the key of a matrix instance in `jobOutputs`. */
export function matrixKey(matrix: Readonly<Record<string, unknown>>): string {
  return Object.keys(matrix)
    .sort()
    .map((axis) => `${axis}=${String(matrix[axis])}`)
    .join(',');
}
