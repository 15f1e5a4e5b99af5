// What `svc preview` does and prints, apart from its argument parsing: the oclif command
// (cli/commands/preview.ts) and the fast path that answers without oclif (cli/fast-path.ts) both
// run it. The preview itself is imported lazily so `svc --help` stays fast.
import { enableCompileCache } from 'node:module';
import type { CommandOutput } from '../compiler/compile-command.ts';
import type { PreviewResult } from './preview.ts';

export interface PreviewArgs {
  event: string;
  branch?: string | undefined;
  debug: boolean;
}

/** Preview `args.event` from the working directory's checkout; prints unless `out.json`. */
export async function runPreview(args: PreviewArgs, out: CommandOutput): Promise<PreviewResult> {
  enableCompileCache();
  const { previewEvent } = await import('./preview.ts');
  const result = await previewEvent({ cwd: process.cwd(), event: args.event, ...(args.branch === undefined ? {} : { branch: args.branch }) });
  for (const w of result.warnings) process.stderr.write(`warning: ${w}\n`);
  if (!out.json) print(result, args.debug, out);
  return result;
}

function print(result: PreviewResult, debug: boolean, out: CommandOutput): void {
  out.log(`event: ${result.label}`);
  const files = result.changedFiles.files;
  out.log(`changed files (vs ${result.changedFiles.base}): ${files === null ? 'unknown' : files.length === 0 ? 'none' : files.length <= 5 ? files.join(', ') : `${files.slice(0, 5).join(', ')} and ${files.length - 5} more`}`);
  if (result.matched.length === 0) out.log('no workflow matches');
  for (const m of result.matched) {
    out.log(`match    ${m.workflow}  via ${m.trigger}`);
    out.log(`         jobs: ${[...m.jobs, ...m.dynamicJobs.map((j) => `${j} (dynamic)`)].join(', ') || '(none)'}`);
    if (debug) printVerdicts(m.verdicts, out);
  }
  for (const u of result.unmatched) {
    out.log(`${u.verdict === 'indeterminate' ? 'undecided' : 'no match'} ${u.workflow}: ${u.reason}`);
    if (debug) printVerdicts(u.verdicts, out);
  }
}

function printVerdicts(verdicts: PreviewResult['matched'][number]['verdicts'], out: CommandOutput): void {
  for (const v of verdicts) out.log(`           ${`${v.triggerType}#${v.trigger}`.padEnd(16)} ${v.filter.padEnd(13)} ${v.verdict.padEnd(13)} ${v.detail}`);
}
