// `svc run <event> --local [--uncommitted] [--debug] [--json] [--branch <name>] [--env KEY=VALUE]… [--pass-env <list>] [--job <name>]…`:
// run the workflows an event built from the local checkout matches, on this machine, as an
// ephemeral agent (cli/local-run/). Jobs get the repository's files at HEAD (with --uncommitted,
// the working tree's changes too). Exit 0 when every job completed, 1 otherwise.
// `svc run local` is retired (usage error, exit 2); `svc run remote` is its own command
// (cli/commands/run/remote.ts).
import { enableCompileCache } from 'node:module';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError } from '../../core/errors.ts';
import type { LocalRunSummary } from '../local-run/run-local.ts';

export default class Run extends SvcCommand {
  static override description = 'Run a workflow for an event: `svc run <event> --local` on this machine, `svc run remote` on the orchestrator';
  static override examples = [
    '<%= config.bin %> run push --local',
    '<%= config.bin %> run push --local --uncommitted',
    '<%= config.bin %> run pr --local --branch main --env API_KEY=dev-key',
    '<%= config.bin %> run tag:v1.2.0 --local --json',
    '<%= config.bin %> run push --local --job unit',
  ];
  // Not strict: `svc run local …` with anything after it still gets the retirement message.
  static override strict = false;
  static override args = { event: Args.string({ description: 'event to simulate (push, pr, tag:<name>, …; the forms of `svc preview`)' }) };
  static override flags = {
    local: Flags.boolean({ description: 'run on this machine as an ephemeral agent' }),
    uncommitted: Flags.boolean({
      description: 'give jobs the working tree\'s uncommitted changes on top of HEAD: modified tracked files and untracked files git does not ignore (deleted files absent)',
    }),
    debug: Flags.boolean({ description: 'print filter verdicts, secret sources and agent/runner diagnostics (stderr)' }),
    branch: Flags.string({ description: 'branch the event is on (for pr and review events: the base branch)' }),
    env: Flags.string({ description: 'a secret for this run, KEY=VALUE (repeatable; wins over .svc/.secrets and .svc/.env.local)', multiple: true }),
    job: Flags.string({ description: 'run only this job and the jobs it needs (repeatable)', multiple: true }),
    'pass-env': Flags.string({
      description: 'which variables of this shell the jobs get, as SVC_AGENT_PASS_ENV: names separated by commas, "default" for the proxy and CA-bundle list, "-NAME" to leave one out, "none" (default: $SVC_AGENT_PASS_ENV, else the list)',
    }),
  };

  async run(): Promise<LocalRunSummary> {
    const { args, flags } = await this.parse(Run);
    if (args.event === 'local') {
      throw new InputError(USAGE_ERROR_CODE, '`svc run local` is retired: use `svc run <event> --local` (for example `svc run push --local`)');
    }
    if (args.event === undefined) {
      throw new InputError(USAGE_ERROR_CODE, 'name an event: `svc run <event> --local` (for example `svc run push --local`) or `svc run remote`');
    }
    if (!flags.local) {
      throw new InputError(USAGE_ERROR_CODE, `\`svc run ${args.event}\` needs --local to run on this machine (\`svc run ${args.event} --local\`); remote runs are \`svc run remote\``);
    }
    enableCompileCache();
    const { runLocal } = await import('../local-run/run-local.ts');
    const json = this.jsonEnabled();
    const abort = new AbortController();
    const interrupt = () => abort.abort(new Error('interrupted'));
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    try {
      const summary = await runLocal({
        cwd: process.cwd(),
        event: args.event,
        ...(flags.branch === undefined ? {} : { branch: flags.branch }),
        uncommitted: flags.uncommitted,
        env: flags.env ?? [],
        jobs: flags.job ?? [],
        ...(flags['pass-env'] === undefined ? {} : { passEnv: flags['pass-env'] }),
        debug: flags.debug,
        // Under --json stdout carries only the summary; the stream goes to stderr.
        write: (text) => void (json ? process.stderr : process.stdout).write(text),
        diag: (text) => void process.stderr.write(text),
        signal: abort.signal,
      });
      if (summary.status === 'failed') process.exitCode = 1;
      return summary;
    } finally {
      process.off('SIGINT', interrupt);
      process.off('SIGTERM', interrupt);
    }
  }
}
