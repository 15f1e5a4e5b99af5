// `svc compile [--check [--fail-on-drift]] [--verbose] [--json]`: write `.svc/svc.lock.json`, or
// (with --check) compare it with what would be written and fail when it is out of date.
// The compiler is imported lazily so `svc --help` and other commands stay fast.
import { enableCompileCache } from 'node:module';
import * as Flags from '@oclif/core/flags';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError } from '../../core/errors.ts';
import type { CompileResult } from '../compiler/compile.ts';

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

export default class Compile extends SvcCommand {
  static override description = 'Compile .svc/workflows into .svc/svc.lock.json (the only file the orchestrator reads to match events)';
  static override examples = [
    '<%= config.bin %> compile',
    '<%= config.bin %> compile --check',
    '<%= config.bin %> compile --check --fail-on-drift --json',
  ];
  static override flags = {
    check: Flags.boolean({ description: 'compile in memory, write nothing, exit 1 when the lock on disk is out of date' }),
    verbose: Flags.boolean({ description: 'list the files hashed for each workflow' }),
    'fail-on-drift': Flags.boolean({ description: 'with --check: also fail when the lock differs only in formatting (byte-for-byte check)' }),
  };

  async run(): Promise<CompileOutput> {
    const { flags } = await this.parse(Compile);
    if (flags['fail-on-drift'] && !flags.check) {
      throw new InputError(USAGE_ERROR_CODE, '--fail-on-drift requires --check: run `svc compile --check --fail-on-drift`');
    }
    enableCompileCache();
    const [{ compileWorkflows, describeDrift }, { findProjectRoot }] = await Promise.all([
      import('../compiler/compile.ts'),
      import('../compiler/project-root.ts'),
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
      } else if (!this.jsonEnabled()) {
        this.log(`${message} (${plural(result.workflows.length, 'workflow')})`);
      }
    } else if (!this.jsonEnabled()) {
      const state = result.written ? (result.drift.missing ? 'written' : 'updated') : 'unchanged';
      this.log(`compiled ${plural(result.workflows.length, 'workflow')}: ${result.lockRelPath} ${state}`);
    }
    if (flags.verbose && !this.jsonEnabled()) this.printVerbose(result);
    return output;
  }

  private printVerbose(result: CompileResult): void {
    for (const w of result.workflows) {
      this.log(`${w.name}  ${w.contentHash.slice(0, 12)}  ${w.source}  jobs: ${w.jobs.join(', ') || '(none)'}`);
      for (const f of w.files) this.log(`  ${f}`);
    }
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
