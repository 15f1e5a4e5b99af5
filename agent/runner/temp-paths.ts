// Names of what ctx.mktemp / ctx.mktempFile make, in one place: the runner makes them, and the
// agent's artifact paths accept them as the job's own (agent/jobs/artifacts.ts). The agent
// recognises them under the job's scratch directory (the runner's TMPDIR, a per-job directory
// the sandbox binds at the same path), so a name shape is enough to say "this job's".
import { tmpdir } from 'node:os';
import { sep } from 'node:path';

/**
 * The job's scratch directory: the TMPDIR the agent spawned the runner with, read when the runner
 * loads, before runner.start swaps in the job's environment. ctx.mktemp stays there even when a
 * workflow's env or ctx.setEnv moves TMPDIR, so what it makes is always what the agent accepts.
 */
export const runnerScratch = tmpdir();

/** mkdtemp prefix of the job's temp root, directly under TMPDIR. */
export const JOB_TEMP_PREFIX = 'svc-job-';
const ROOT = /^svc-job-[A-Za-z0-9]{6}$/;
const DIR = /^dir-[0-9]+$/;
const FILE = /^file-[0-9]+/;

export const tempDirName = (n: number): string => `dir-${n}`;
export const tempFileName = (n: number, suffix: string): string => `file-${n}${suffix}`;

/**
 * For `rel`, a path relative to the job's scratch directory: the entry ctx.mktemp or
 * ctx.mktempFile made that contains it (`svc-job-XXXXXX/dir-N` or `.../file-N<suffix>`), or
 * undefined. A file entry contains only itself.
 */
export function ownedTempEntry(rel: string): { entry: string; kind: 'dir' | 'file' } | undefined {
  const parts = rel.split(sep);
  if (parts.length < 2 || !ROOT.test(parts[0]!)) return undefined;
  const entry = `${parts[0]}${sep}${parts[1]}`;
  if (DIR.test(parts[1]!)) return { entry, kind: 'dir' };
  if (FILE.test(parts[1]!) && parts.length === 2) return { entry, kind: 'file' };
  return undefined;
}
