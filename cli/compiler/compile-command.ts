// What `svc compile` does and prints, apart from its flag parsing: the oclif command
// (cli/commands/compile.ts) and the fast path that answers without oclif (cli/fast-path.ts) both
// run it, so both behave alike. The compiler is imported lazily so `svc --help` stays fast.
import { enableCompileCache } from 'node:module';
import { USAGE_ERROR_CODE } from '../../core/cli/error-text.ts';
import { InputError } from '../../core/errors.ts';
import type { CompileResult } from './compile.ts';

export interface CompileFlags {
  check: boolean;
  verbose: boolean;
  'fail-on-drift': boolean;
}

/** Where a command prints its human lines, and whether `--json` took over stdout. */
export interface CommandOutput {
  log: (line: string) => void;
  json: boolean;
}

export interface CompileOutput {
  lockPath: string;
  schemaVersion: number;
  minReaderVersion: number | undefined;
  lockContentHash: string;
  workflows: { name: string; source: string; contentHash: string; jobs: string[]; files?: string[] }[];
  contentHashes: Record<string, string>;
  changed: boolean;
  written: boolean;
  warnings: { code: string; path: string; message: string }[];
  notes: string[];
  notice?: string;
  check?: {
    upToDate: boolean;
    identical: boolean;
    missing: boolean;
    added: string[];
    removed: string[];
    changed: string[];
    fields: string[];
    message: string;
  };
}

/** Compile (or check) the lock of the project the working directory is in; prints unless `out.json`. */
export async function runCompile(flags: CompileFlags, out: CommandOutput): Promise<CompileOutput> {
  if (flags['fail-on-drift'] && !flags.check) {
    throw new InputError(USAGE_ERROR_CODE, '--fail-on-drift requires --check: run `svc compile --check --fail-on-drift`');
  }
  enableCompileCache();
  const [{ compileWorkflows, describeDrift }, { findProjectRoot }] = await Promise.all([
    import('./compile.ts'),
    import('./project-root.ts'),
  ]);
  const { root } = findProjectRoot();
  const result = await compileWorkflows({ repoRoot: root, mode: flags.check ? 'check' : 'write' });
  for (const w of result.warnings) process.stderr.write(`warning: ${w.message}\n`);
  for (const n of result.notes) process.stderr.write(`note: ${n}\n`);
  if (result.notice !== undefined) process.stderr.write(`${result.notice}\n`);
  const output = toOutput(result, flags.verbose);
  if (flags.check) {
    const message = describeDrift(result.drift, result.lockRelPath);
    const failed = !result.drift.upToDate || (flags['fail-on-drift'] && !result.drift.identical);
    output.check = {
      upToDate: result.drift.upToDate,
      identical: result.drift.identical,
      missing: result.drift.missing,
      added: result.drift.added,
      removed: result.drift.removed,
      changed: result.drift.changed,
      fields: result.drift.fields,
      message,
    };
    if (failed) {
      process.stderr.write(`${message}: run \`svc compile\` and commit ${result.lockRelPath}\n`);
      process.exitCode = 1;
    } else if (!out.json) {
      out.log(`${message} (${plural(result.workflows.length, 'workflow')})`);
    }
  } else if (!out.json) {
    const state = result.written ? (result.drift.missing ? 'written' : 'updated') : 'unchanged';
    out.log(`compiled ${plural(result.workflows.length, 'workflow')}: ${result.lockRelPath} ${state}`);
  }
  if (flags.verbose && !out.json) printVerbose(result, out);
  return output;
}

function printVerbose(result: CompileResult, out: CommandOutput): void {
  for (const w of result.workflows) {
    out.log(`${w.name}  ${w.contentHash.slice(0, 12)}  ${w.source}  jobs: ${w.jobs.join(', ') || '(none)'}`);
    for (const f of w.files) out.log(`  ${f}`);
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function toOutput(result: CompileResult, verbose: boolean): CompileOutput {
  return {
    lockPath: result.lockRelPath,
    schemaVersion: result.lock.schemaVersion,
    minReaderVersion: result.lock.minReaderVersion,
    lockContentHash: result.lock.contentHash,
    workflows: result.workflows.map((w) => ({
      name: w.name,
      source: w.source,
      contentHash: w.contentHash,
      jobs: w.jobs,
      ...(verbose ? { files: w.files } : {}),
    })),
    contentHashes: Object.fromEntries(result.workflows.map((w) => [w.name, w.contentHash])),
    changed: result.changed,
    written: result.written,
    warnings: result.warnings.map((w) => ({ code: w.code, path: w.path, message: w.message })),
    notes: result.notes,
    ...(result.notice === undefined ? {} : { notice: result.notice }),
  };
}
